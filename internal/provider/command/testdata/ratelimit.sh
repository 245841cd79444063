#!/bin/sh
# Fake agent: the model API rate-limited it.
cat > /dev/null
echo 'API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}' >&2
exit 1
