#!/bin/sh
# Fake agent: JSON inline after prose with stray braces, then more prose.
cat > /dev/null
echo 'Thinking about {the diff}... final answer: {"ok": true, "nested": {"a": [1, "}"]}} and {"second": 1} done.'
