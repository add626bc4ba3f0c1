# A container command's wrapper (see ../command-watch.ts), run as
# `bash -c <this text> belay-watch <port> <id> <command…>`: tells the watch on 127.0.0.1:<port>
# that command <id> starts and ends. The connection is best effort: without it the command runs
# unwatched (as it would without bash).
p=$1 id=$2; shift 2
{ exec 9<>"/dev/tcp/127.0.0.1/$p"; } 2>/dev/null && printf 'start %s\n' "$id" >&9
"$@" 9>&-
rc=$?
printf 'end %s\n' "$id" 2>/dev/null >&9
exit $rc
