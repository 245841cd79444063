#!/bin/sh
# Fake agent: fails with a usage error.
cat > /dev/null
echo "partial output"
echo "error: unknown option '--bogus'" >&2
exit 3
