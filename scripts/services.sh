#!/usr/bin/env bash
# Real local services for offloader's tests and demos: an Apache Kafka 4.x broker
# (single-node KRaft, jars from Maven Central, run with the machine's Java),
# Azurite's blob service (npm) and an S3 emulator (moto's server mode, in the
# Python environment of scripts/python-env.sh). Everything lands in .cache/
# (ignored by git).
#
#   scripts/services.sh install|start|stop|wipe|status|env [kafka|azurite|s3|all]
#   scripts/services.sh install tools
#   scripts/services.sh start|stop|wipe cluster     a 3-node replicated cluster
#   scripts/services.sh node stop|kill|start N      one of its nodes
#   scripts/services.sh leader TOPIC PARTITION      (scripts/services-cluster.sh)
#   scripts/services.sh coordinator group|transaction ID
#
# all is the single broker, Azurite and the S3 emulator; the cluster starts
# only when named.
#
# install tools fetches Kafka's command-line tools of the same release and
# writes wrappers into .cache/bin (kafka-topics.sh, kafka-configs.sh,
# kafka-console-consumer.sh, kafka-console-producer.sh,
# kafka-consumer-groups.sh, kafka-transactions.sh); env puts them on PATH.
#
# start keeps the data of an earlier run (a stop and start is like a restart);
# wipe deletes it (the service must be stopped).
#
# Ports default away from the well-known ones so a developer's own Kafka on 9092
# or Azurite on 10000 keeps running: DEV_KAFKA_PORT (19092),
# DEV_KAFKA_CONTROLLER_PORT (19093), DEV_AZURITE_PORT (10100), DEV_S3_PORT (10200).
# Versions: DEV_KAFKA_VERSION (4.4.0), DEV_AZURITE_VERSION (3.37.0).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${DEV_CACHE:-$root/.cache}
run_dir=$cache/run

kafka_version=${DEV_KAFKA_VERSION:-4.4.0}
# log4j-slf4j-impl binds the broker's slf4j 1.7 API to log4j2; without it the
# broker logs nothing at all.
log4j_version=${DEV_LOG4J_VERSION:-2.25.5}
kafka_port=${DEV_KAFKA_PORT:-19092}
controller_port=${DEV_KAFKA_CONTROLLER_PORT:-19093}
kafka_home=$cache/kafka-$kafka_version
kafka_state=$run_dir/kafka

azurite_version=${DEV_AZURITE_VERSION:-3.37.0}
azurite_port=${DEV_AZURITE_PORT:-10100}
azurite_home=$cache/azurite-$azurite_version
azurite_state=$run_dir/azurite

s3_port=${DEV_S3_PORT:-10200}
s3_state=$run_dir/s3

start_timeout=${DEV_SERVICE_START_TIMEOUT:-120}

log() { echo "services: $*" >&2; }
die() { log "$*"; exit 1; }

running() { # pidfile
  [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

port_open() { # port
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

stop_pid() { # name pidfile grace-seconds [then-kill-quietly]
  local name=$1 pidfile=$2 grace=$3 quiet=${4:-} pid i
  if ! running "$pidfile"; then
    rm -f "$pidfile"
    log "$name is not running"
    return 0
  fi
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || true
  for i in $(seq 1 $((grace * 4))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  if kill -0 "$pid" 2>/dev/null; then
    [ -n "$quiet" ] || log "$name (pid $pid) did not stop within ${grace}s; killing it"
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
  log "$name stopped"
}

# ---------------------------------------------------------------- Kafka

# maven_fetch DIR ARTIFACT WHAT: copies the runtime jars of Kafka's ARTIFACT
# (with log4j's slf4j binding) into DIR/libs, unless an earlier fetch finished.
maven_fetch() {
  local dir=$1 artifact=$2 what=$3
  if [ -f "$dir/libs/.complete" ]; then return 0; fi
  command -v mvn >/dev/null || die "mvn not found: Maven is needed to fetch $what"
  log "fetching $what with Maven into $dir/libs"
  mkdir -p "$dir"
  cat >"$dir/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>offloader.test</groupId>
  <artifactId>$artifact-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>$artifact</artifactId><version>$kafka_version</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$log4j_version</version></dependency>
  </dependencies>
</project>
EOF
  rm -rf "$dir/libs"
  # Maven 3.8 writes colour codes even in batch mode: they are filtered out.
  if ! mvn -B -q -Dstyle.color=never -f "$dir/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$dir/libs" -DincludeScope=runtime 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g' >&2; then
    die "Maven could not resolve org.apache.kafka:$artifact:$kafka_version (set DEV_KAFKA_VERSION to another 4.x release)"
  fi
  touch "$dir/libs/.complete"
}

kafka_install() {
  command -v java >/dev/null || die "java not found: Java 17+ is needed to run the Kafka broker"
  maven_fetch "$kafka_home" kafka_2.13 "Apache Kafka $kafka_version broker jars"
}

# The broker and its tools run from the jar folder with the machine's Java.
kafka_java=(java -Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true
  -Dlog4j2.configurationFile="$kafka_state/log4j2.properties" -cp "$kafka_home/libs/*")

kafka_write_config() {
  mkdir -p "$kafka_state/data"
  cat >"$kafka_state/server.properties" <<EOF
# Written by scripts/services.sh: a single-node KRaft broker for tests.
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$controller_port
listeners=PLAINTEXT://127.0.0.1:$kafka_port,CONTROLLER://127.0.0.1:$controller_port
advertised.listeners=PLAINTEXT://127.0.0.1:$kafka_port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$kafka_state/data
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
# Transactions and consumer groups on one node: replication factor 1 and few
# partitions for the internal topics, no initial rebalance delay.
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=3
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# One node has nowhere to move leadership to, and Kafka 4.4 skips the
# transaction markers of a partition left without a leader while it shuts down
# (KAFKA-20734, open): a transaction committed in that window stays open on the
# partition for good (a hanging transaction).
controlled.shutdown.enable=false
auto.create.topics.enable=false
delete.topic.enable=true
log.flush.interval.messages=9223372036854775807
log.segment.bytes=268435456
log.retention.check.interval.ms=300000
EOF
  cat >"$kafka_state/log4j2.properties" <<EOF
status = warn
# Keep logging while the broker shuts down (log4j's own hook would stop first).
shutdownHook = disable
appender.file.type = File
appender.file.name = file
appender.file.fileName = $kafka_state/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
EOF
}

kafka_start() {
  local pidfile=$kafka_state/pid i
  if running "$pidfile"; then
    log "Kafka is already running (pid $(cat "$pidfile")) on 127.0.0.1:$kafka_port"
    return 0
  fi
  if port_open "$kafka_port"; then
    die "port $kafka_port is already in use by another process; set DEV_KAFKA_PORT to a free port"
  fi
  kafka_install
  kafka_write_config
  # Topics survive a stop and start, as in a real broker restart (tests restart
  # the broker mid-run); `make clean` removes them.
  if [ ! -f "$kafka_state/data/meta.properties" ]; then
    log "formatting KRaft storage in $kafka_state/data"
    "${kafka_java[@]}" kafka.tools.StorageTool format --standalone \
      -t "$("${kafka_java[@]}" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)" \
      -c "$kafka_state/server.properties" >"$kafka_state/format.log" 2>&1 ||
      { cat "$kafka_state/format.log" >&2; die "formatting Kafka storage failed"; }
  fi
  # The log keeps earlier runs (a broker restart's shutdown is often what a
  # failure needs); readiness is read from what this start appends.
  local server_log=$kafka_state/server.log from
  if [ -f "$server_log" ] && [ "$(stat -c %s "$server_log")" -gt $((64 << 20)) ]; then mv "$server_log" "$server_log.1"; fi
  from=$(($( [ -f "$server_log" ] && stat -c %s "$server_log" || echo 0) + 1))
  log "starting Apache Kafka $kafka_version on 127.0.0.1:$kafka_port"
  nohup "${kafka_java[@]}" kafka.Kafka "$kafka_state/server.properties" >"$kafka_state/stdout.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  for i in $(seq 1 $((start_timeout * 2))); do
    if ! running "$pidfile"; then
      tail -n 40 "$kafka_state/stdout.log" "$kafka_state/server.log" >&2 2>/dev/null || true
      die "the Kafka broker exited during start-up (logs above, full logs in $kafka_state)"
    fi
    if port_open "$kafka_port" && tail -c +"$from" "$server_log" 2>/dev/null | grep -q "Kafka Server started"; then
      log "Kafka is ready on 127.0.0.1:$kafka_port (pid $(cat "$pidfile"), logs in $kafka_state)"
      return 0
    fi
    sleep 0.5
  done
  tail -n 40 "$kafka_state/server.log" >&2 2>/dev/null || true
  kafka_stop
  die "Kafka did not become ready within ${start_timeout}s"
}

kafka_stop() { stop_pid Kafka "$kafka_state/pid" 30; }

# ---------------------------------------------------------------- Azurite

azurite_install() {
  if [ -x "$azurite_home/node_modules/.bin/azurite-blob" ]; then return 0; fi
  command -v npm >/dev/null || die "npm not found: Node.js and npm are needed to install Azurite"
  log "installing Azurite $azurite_version with npm into $azurite_home"
  mkdir -p "$azurite_home"
  local pinned=$root/scripts/azurite
  if grep -q "\"azurite\": \"$azurite_version\"" "$pinned/package.json"; then
    # The whole dependency tree as pinned in scripts/azurite/package-lock.json:
    # resolved afresh, a dependency's newest version may be one the registry
    # does not serve yet (it happened to @azure/msal-common).
    cp "$pinned/package.json" "$pinned/package-lock.json" "$azurite_home/"
    (cd "$azurite_home" && npm ci --no-audit --no-fund --loglevel=error) >&2 ||
      die "npm could not install azurite@$azurite_version from scripts/azurite/package-lock.json"
  else
    npm install --no-audit --no-fund --loglevel=error --prefix "$azurite_home" "azurite@$azurite_version" >&2 ||
      die "npm could not install azurite@$azurite_version"
  fi
}

azurite_start() {
  local pidfile=$azurite_state/pid i
  if running "$pidfile"; then
    log "Azurite is already running (pid $(cat "$pidfile")) on 127.0.0.1:$azurite_port"
    return 0
  fi
  if port_open "$azurite_port"; then
    die "port $azurite_port is already in use by another process; set DEV_AZURITE_PORT to a free port"
  fi
  azurite_install
  # Blobs survive a stop and start, as in a real outage (tests stop Azurite mid-run);
  # `make clean` removes them.
  mkdir -p "$azurite_state/data"
  log "starting Azurite $azurite_version (blob service) on 127.0.0.1:$azurite_port"
  # --skipApiVersionCheck: the Go SDK speaks a newer API version than Azurite knows.
  nohup "$azurite_home/node_modules/.bin/azurite-blob" --blobHost 127.0.0.1 --blobPort "$azurite_port" \
    --location "$azurite_state/data" --skipApiVersionCheck --loose --silent \
    >"$azurite_state/azurite.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  for i in $(seq 1 $((start_timeout * 2))); do
    if ! running "$pidfile"; then
      tail -n 40 "$azurite_state/azurite.log" >&2 || true
      die "Azurite exited during start-up (log above)"
    fi
    # Any HTTP answer from the blob endpoint means the service is up.
    if curl -s -o /dev/null -m 2 "http://127.0.0.1:$azurite_port/devstoreaccount1?comp=list"; then
      log "Azurite is ready on 127.0.0.1:$azurite_port (pid $(cat "$pidfile"))"
      return 0
    fi
    sleep 0.5
  done
  azurite_stop
  die "Azurite did not become ready within ${start_timeout}s"
}

# Azurite waits for idle keep-alive connections before it exits; its test data
# is disposable, so it gets a short grace period.
# Azurite ignores SIGTERM and SIGINT (measured: still up 10 s after either):
# it gets 3 s to save its metadata, then SIGKILL, as a matter of course.
azurite_stop() { stop_pid Azurite "$azurite_state/pid" 3 quietly; }

# ---------------------------------------------------------------- S3 (moto)

s3_install() { "$root/scripts/python-env.sh" >/dev/null; }

s3_start() {
  local pidfile=$s3_state/pid i python
  if running "$pidfile"; then
    log "the S3 emulator is already running (pid $(cat "$pidfile")) on 127.0.0.1:$s3_port"
    return 0
  fi
  if port_open "$s3_port"; then
    die "port $s3_port is already in use by another process; set DEV_S3_PORT to a free port"
  fi
  python=$("$root/scripts/python-env.sh")
  mkdir -p "$s3_state"
  log "starting the S3 emulator (moto server) on 127.0.0.1:$s3_port"
  # moto keeps its objects in memory: a stop loses them, as a wipe would.
  nohup "$python" -m moto.server -H 127.0.0.1 -p "$s3_port" >"$s3_state/moto.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  for i in $(seq 1 $((start_timeout * 2))); do
    if ! running "$pidfile"; then
      tail -n 40 "$s3_state/moto.log" >&2 || true
      die "the S3 emulator exited during start-up (log above)"
    fi
    if curl -s -o /dev/null -m 2 "http://127.0.0.1:$s3_port/"; then
      log "the S3 emulator is ready on 127.0.0.1:$s3_port (pid $(cat "$pidfile"))"
      return 0
    fi
    sleep 0.5
  done
  s3_stop
  die "the S3 emulator did not become ready within ${start_timeout}s"
}

s3_stop() { stop_pid "the S3 emulator" "$s3_state/pid" 5; }

s3_wipe() {
  running "$s3_state/pid" && die "the S3 emulator is running: stop it before wiping its data"
  rm -rf "$s3_state"
}

# ---------------------------------------------------------------- tools

tools_home=$kafka_home/tools
tools_bin=$cache/bin
# The tools and the class each wrapper runs (Kafka 4's bin/ scripts run these).
tools_classes="kafka-topics.sh=org.apache.kafka.tools.TopicCommand
kafka-configs.sh=org.apache.kafka.tools.ConfigCommand
kafka-console-consumer.sh=org.apache.kafka.tools.consumer.ConsoleConsumer
kafka-console-producer.sh=org.apache.kafka.tools.ConsoleProducer
kafka-consumer-groups.sh=org.apache.kafka.tools.consumer.group.ConsumerGroupCommand
kafka-transactions.sh=org.apache.kafka.tools.TransactionsCommand"

tools_install() {
  maven_fetch "$tools_home" kafka-tools "Apache Kafka $kafka_version command-line tools"
  mkdir -p "$tools_bin"
  local line name class
  while IFS= read -r line; do
    name=${line%%=*} class=${line#*=}
    printf '#!/usr/bin/env bash\n# Written by scripts/services.sh install tools: Apache Kafka %s %s.\nexec java -Xmx256m -cp "%s/libs/*" %s "$@"\n' \
      "$kafka_version" "$name" "$tools_home" "$class" >"$tools_bin/$name"
    chmod +x "$tools_bin/$name"
  done <<<"$tools_classes"
  log "Kafka's tools are in $tools_bin (eval \"\$(scripts/services.sh env)\" puts them on PATH)"
}

# ---------------------------------------------------------------- cluster

# shellcheck source=scripts/services-cluster.sh
. "$root/scripts/services-cluster.sh"

# ---------------------------------------------------------------- main

# print_env prints shell exports that point tests and tools at the services.
print_env() {
  echo "export TEST_KAFKA_BOOTSTRAP='127.0.0.1:$kafka_port'"
  # Azurite's well-known development account; not a secret.
  echo "export TEST_AZURE_CONNECTION_STRING='DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:$azurite_port/devstoreaccount1;'"
  echo "export TEST_SERVICES_SCRIPT='$root/scripts/services.sh'"
  # What the example pipeline files in configs/ read.
  echo "export KAFKA_BOOTSTRAP_SERVERS='127.0.0.1:$kafka_port'"
  echo "export AZURE_STORAGE_CONNECTION_STRING='DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:$azurite_port/devstoreaccount1;'"
  # The S3 emulator takes any credentials (the tests give the AWS SDK some;
  # yours stay as they are in this shell).
  echo "export TEST_S3_ENDPOINT='http://127.0.0.1:$s3_port'"
  echo "export TEST_CLUSTER_BOOTSTRAP='$(cluster_bootstrap)'"
  if [ -d "$tools_bin" ]; then echo "export PATH='$tools_bin':\"\$PATH\""; fi
}

action=${1:-}
case "$action" in
node) node_command "${2:-}" "${3:-}"; exit ;;
leader) leader_command "${2:-}" "${3:-}"; exit ;;
coordinator) coordinator_command "${2:-}" "${3:-}"; exit ;;
esac
what=${2:-all}
case "$action/$what" in install/tools | */kafka | */azurite | */s3 | */all) ;;
start/cluster | stop/cluster | wipe/cluster | install/cluster | status/cluster) "cluster_$action"; exit ;;
*) die "unknown service '$what' (kafka, azurite, s3, all or cluster; install also takes tools)" ;;
esac
each() { # action
  if [ "$what" = kafka ] || [ "$what" = all ]; then "kafka_$1"; fi
  if [ "$what" = azurite ] || [ "$what" = all ]; then "azurite_$1"; fi
  if [ "$what" = s3 ] || [ "$what" = all ]; then "s3_$1"; fi
}
kafka_wipe() {
  running "$kafka_state/pid" && die "Kafka is running: stop it before wiping its data"
  rm -rf "$kafka_state"
}
azurite_wipe() {
  running "$azurite_state/pid" && die "Azurite is running: stop it before wiping its data"
  rm -rf "$azurite_state"
}
case "$action" in
install) if [ "$what" = tools ]; then tools_install; else each install; fi ;;
start) each start ;;
stop) each stop ;;
wipe) each wipe ;;
status)
  running "$kafka_state/pid" && echo "kafka: running (pid $(cat "$kafka_state/pid"), 127.0.0.1:$kafka_port)" || echo "kafka: stopped"
  running "$azurite_state/pid" && echo "azurite: running (pid $(cat "$azurite_state/pid"), 127.0.0.1:$azurite_port)" || echo "azurite: stopped"
  running "$s3_state/pid" && echo "s3: running (pid $(cat "$s3_state/pid"), 127.0.0.1:$s3_port)" || echo "s3: stopped"
  cluster_status
  ;;
env) print_env ;;
*)
  echo "usage: scripts/services.sh install|start|stop|wipe|status|env [kafka|azurite|s3|all|cluster]" >&2
  echo "       scripts/services.sh node stop|kill|start N | leader TOPIC PARTITION | coordinator group|transaction ID" >&2
  exit 2
  ;;
esac
