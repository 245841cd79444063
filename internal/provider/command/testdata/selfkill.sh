#!/bin/sh
# Fake agent: dies from a signal diffpal did not send.
cat > /dev/null
kill -9 $$
