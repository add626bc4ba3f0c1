# The agent doctor's wrapper (see ../doctor.ts), run as
# `sh -c <this text> belay-doctor <mark> <report> <agent command…>`: runs the agent as a child
# marked with BELAY_DOCTOR_MARK=<mark>, waits for it, then writes to <report> the processes still
# carrying the mark: what the agent left running when it exited. Its stdin is passed on
# explicitly (a background job's stdin would otherwise be /dev/null).
mark="$1"; report="$2"; shift 2
BELAY_DOCTOR_MARK="$mark" "$@" <&0 &
agent=$!
wait "$agent"; code=$?
grep -la "BELAY_DOCTOR_MARK=$mark" /proc/[0-9]*/environ 2>/dev/null | while read -r f; do
  p=${f#/proc/}; p=${p%/environ}
  printf '%s %s\n' "$p" "$(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-120)"
done > "$report.part" 2>/dev/null && mv "$report.part" "$report"
exit "$code"
