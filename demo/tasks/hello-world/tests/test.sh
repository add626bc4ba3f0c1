#!/bin/sh
# Runs in the task's working directory after the agent finished; exit 0 means reward 1.
mkdir -p "$LOGS_DIR/verifier"
if [ "$(cat hello.txt 2>/dev/null)" = "Hello, world!" ]; then status=passed; code=0; else status=failed; code=1; fi
cat > "$LOGS_DIR/verifier/ctrf.json" <<JSON
{"results": {"tool": {"name": "sh"}, "summary": {"tests": 1}, "tests": [{"name": "hello.txt holds the greeting", "status": "$status", "duration": 1}]}}
JSON
echo "hello.txt holds the greeting: $status"
[ "$status" = passed ] || echo "expected 'Hello, world!', found: '$(cat hello.txt 2>/dev/null || echo '(no hello.txt)')'"
exit $code
