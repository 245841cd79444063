#!/bin/sh
# Fake agent: not logged in (reported on stdout, as some CLIs do).
cat > /dev/null
echo "Invalid API key · Please run /login"
exit 1
