#!/bin/sh
# Runs in the working directory after the agent finished (the tests are staged in $TEST_DIR).
expected=$(wc -w < words.txt | tr -d ' ')
actual=$(tr -d ' \n' < count.txt 2>/dev/null)
if [ "$actual" = "$expected" ]; then echo "count.txt is $expected: passed"; exit 0; fi
echo "count.txt should be $expected, found '${actual:-(missing)}'"
exit 1
