#!/bin/sh
# A scripted agent for trying the Cues panel without an LLM: it joins the mailbox, then asks you
# one cue of each kind (text, choice, multiple choice, confirm, form, pause) and prints what it
# receives. Run it in a VS Code terminal, where Belay puts its `cueme` on PATH:
#     sh cues/scripted-agent.sh
# Elsewhere, point CUEME at a cueme command, e.g. CUEME="node /path/to/belay/dist/cueme.js".
set -eu
CUEME="${CUEME:-cueme}"

joined=$($CUEME join scripted_demo)
agent=$(printf '%s\n' "$joined" | sed -n 's/^agent_id=//p')
[ -n "$agent" ] || { echo "join printed no agent_id:" >&2; printf '%s\n' "$joined" >&2; exit 1; }
echo "joined as $agent"

# ask PROMPT [PAYLOAD_JSON]: one cue; prints the answer cueme returns.
ask() {
  echo
  echo "=== cue: $1"
  {
    printf '<cueme_prompt>\n%s\n</cueme_prompt>\n' "$1"
    if [ -n "${2:-}" ]; then printf '<cueme_payload>\n%s\n</cueme_payload>\n' "$2"; fi
  } | $CUEME cue "$agent" -
}

ask 'Hello! I am a **scripted** demo agent. Type anything in the reply box and press Enter.'
ask 'Which environment should I deploy to?' '{"type":"choice","options":["staging","production","both"]}'
ask 'Which checks should run before the release? (pick any)' '{"type":"choice","options":["lint","unit tests","e2e tests"],"allow_multiple":true}'
ask 'Ready to tag the release?' '{"type":"confirm","text":"This pushes tag `v1.2.0`.","confirm_label":"Tag it","cancel_label":"Not yet"}'
ask 'A few details for the changelog, please.' '{"type":"form","fields":[{"label":"Version","options":["1.2.0","2.0.0"]},{"label":"Areas","options":["cli","panel","docs"],"allow_multiple":true},{"label":"Headline","kind":"text"}]}'
echo
echo "=== pause"
$CUEME pause "$agent" 'Demo finished. Click **Continue** to end it.'
