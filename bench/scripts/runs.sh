#!/bin/sh
# Runs the bench N times, one after the other, on the same build, for pooling (bench/scripts/pool.py).
# Builds in the reactor (no install) and runs the bench's main on the modules' jars. Each run's
# results go to OUT/runK/; the load average and the time at each start to OUT/runK/start.txt.
#
#   bench/scripts/runs.sh N OUT [bench flags...]
#   e.g. bench/scripts/runs.sh 7 bench/target/pooled --phases main,profile --threads 1,8,32 \
#          --strategies bare,floor,floor-claim-first,claim,claim-work-first,claim-adaptive,three-tx
#
# From the repository root, with JAVA_HOME a JDK 21+. Pass --schema NAME on a shared server.
set -eu
n=$1
out=$2
shift 2
: "${JAVA_HOME:?set JAVA_HOME to a JDK 21+}"
./mvnw -B -o -q -pl bench -am package dependency:build-classpath -DskipTests -Dmaven.javadoc.skip=true \
    -Dmdep.outputFile=target/bench.classpath -Dmdep.includeScope=runtime
cp="bench/target/classes:$(cat bench/target/bench.classpath)"
mkdir -p "$out"
git rev-parse HEAD > "$out/commit.txt" 2>/dev/null || true
k=1
while [ "$k" -le "$n" ]; do
    dir="$out/run$k"
    mkdir -p "$dir"
    { date -u '+%Y-%m-%d %H:%M:%S UTC'; uptime; } > "$dir/start.txt"
    "$JAVA_HOME/bin/java" -Dorg.jooq.no-logo=true -Dorg.jooq.no-tips=true \
        -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
        -Dorg.slf4j.simpleLogger.log.org.jooq.impl.DefaultExecuteContext.logVersionSupport=error \
        -cp "$cp" io.github.idemtx.bench.Bench "$@" --out "$dir" > "$dir/console.txt" 2>&1
    k=$((k + 1))
done
