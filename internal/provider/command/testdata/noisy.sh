#!/bin/sh
# Fake agent: floods stderr, then fails.
cat > /dev/null
i=0
while [ $i -lt 400 ]; do
  echo "log line $i: lorem ipsum dolor sit amet" >&2
  i=$((i+1))
done
echo "fatal: the last line" >&2
exit 2
