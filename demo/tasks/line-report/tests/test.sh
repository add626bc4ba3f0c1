#!/bin/sh
# Runs in the verifier's own environment: the agent's final working folder and nothing else.
mkdir -p "$LOGS_DIR/verifier"
expected=$(wc -l < poem.txt | tr -d ' ')
if [ "$(cat lines.txt 2>/dev/null)" = "$expected" ]; then status=passed; code=0; else status=failed; code=1; fi
cat > "$LOGS_DIR/verifier/ctrf.json" <<JSON
{"results": {"tool": {"name": "sh"}, "summary": {"tests": 1}, "tests": [{"name": "lines.txt holds the line count", "status": "$status", "duration": 1}]}}
JSON
echo "lines.txt holds the line count: $status"
[ "$status" = passed ] || echo "expected '$expected', found: '$(cat lines.txt 2>/dev/null || echo '(no lines.txt)')'"
exit $code
