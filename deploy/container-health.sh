#!/bin/sh
# The image's HEALTHCHECK (installed as merchant-pay-health): the health check of whichever app
# this container runs, found among its processes whatever started it (the image's CMD, a compose
# or `docker run` command, npm, an init): the worker's heartbeat or the API's /ready, each its
# main.js --health. A container running neither (a one-shot migration or CLI) is unhealthy and
# says why. MERCHANT_PAY_DIR (/app) and HEALTH_PROC (/proc) exist for the tests.
app=${MERCHANT_PAY_DIR:-/app}
for cmdline in "${HEALTH_PROC:-/proc}"/[0-9]*/cmdline; do
  args=$(tr '\000' ' ' <"$cmdline" 2>/dev/null) || continue
  case "$args" in
  *--health* | *--help*) ;;
  *apps/worker/src/main.js*) exec node "$app/dist/apps/worker/src/main.js" --health ;;
  *apps/api/src/main.js*) exec node "$app/dist/apps/api/src/main.js" --health ;;
  esac
done
echo "unhealthy: neither the API (dist/apps/api/src/main.js) nor the worker (dist/apps/worker/src/main.js) runs in this container"
exit 1
