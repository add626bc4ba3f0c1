# Starts the host services' forwarder inside a container (see ../container.ts), run as
# `/bin/sh -c <this text> <forwarder.py> <forwarder.pl> <plan as JSON> <auto|python3|perl> <port=socket>…`.
py=$0 pl=$1 plan=$2 choice=$3; shift 3
if [ "$choice" != perl ] && command -v python3 >/dev/null 2>&1; then exec python3 -c "$py" "$plan"; fi
if [ "$choice" != python3 ] && command -v perl >/dev/null 2>&1; then exec perl -e "$pl" "$@"; fi
echo "belay: the image has no python3 (nor perl)" >&2; exit 127
