#!/bin/sh
wc -l < poem.txt | tr -d ' ' > lines.txt
mkdir -p /tmp/report
printf '%s\n\nCounted the lines of poem.txt with wc -l into lines.txt.\n' "$REPORT_TITLE" > /tmp/report/summary.txt
