#!/bin/sh
# Fake agent: answers in prose only.
cat > /dev/null
echo "I looked at the diff and it is fine."
