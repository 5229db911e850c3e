# A 3-node replicated Kafka cluster for the tests that need one (leader
# failover, coordinator bounces): sourced by scripts/services.sh, which owns
# the helpers (log, die, running, port_open, stop_pid, kafka_install) and the
# commands:
#
#   scripts/services.sh start|stop|wipe cluster
#   scripts/services.sh node stop|kill|start N     clean stop, kill -9, restart
#   scripts/services.sh leader TOPIC PARTITION     the node leading it
#   scripts/services.sh coordinator group|transaction ID
#
# Nodes are combined broker+controller KRaft nodes 1-3 with static voters,
# replication factor 3 and min.insync.replicas 2 for every topic, internal ones
# included: one node may be down and every write still commits. Node N
# listens on DEV_CLUSTER_PORT + 2(N-1) (19192, 19194, 19196) and its
# controller on the port above. Data and logs: .cache/run/cluster/nodeN.
# leader and coordinator use Kafka's tools (scripts/services.sh install tools).

cluster_nodes=3
cluster_port=${DEV_CLUSTER_PORT:-19192}
cluster_state=$run_dir/cluster
# The cluster's three JVMs share the machine with the single broker and the
# suite: half the single broker's heap each.
cluster_java=(java -Xms128m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true -cp "$kafka_home/libs/*")

node_port() { echo $((cluster_port + 2 * ($1 - 1))); }
node_dir() { echo "$cluster_state/node$1"; }

cluster_bootstrap() {
  local n out=
  for n in $(seq 1 $cluster_nodes); do out+=${out:+,}127.0.0.1:$(node_port "$n"); done
  echo "$out"
}

node_write_config() { # node
  local n=$1 dir voters= i
  dir=$(node_dir "$n")
  for i in $(seq 1 $cluster_nodes); do voters+=${voters:+,}$i@127.0.0.1:$(($(node_port "$i") + 1)); done
  mkdir -p "$dir/data"
  cat >"$dir/server.properties" <<EOF
# Written by scripts/services.sh: node $n of a 3-node KRaft cluster for tests.
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$(node_port "$n"),CONTROLLER://127.0.0.1:$(($(node_port "$n") + 1))
advertised.listeners=PLAINTEXT://127.0.0.1:$(node_port "$n")
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
num.partitions=1
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
transaction.state.log.num.partitions=3
share.coordinator.state.topic.replication.factor=3
share.coordinator.state.topic.min.isr=2
group.initial.rebalance.delay.ms=0
# A clean stop moves leadership away first (the default), as an operator's
# rolling restart does; kill -9 is the crash.
controlled.shutdown.enable=true
unclean.leader.election.enable=false
auto.create.topics.enable=false
delete.topic.enable=true
log.segment.bytes=268435456
EOF
  cat >"$dir/log4j2.properties" <<EOF
status = warn
shutdownHook = disable
appender.file.type = File
appender.file.name = file
appender.file.fileName = $dir/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.state.name = state.change.logger
logger.state.level = WARN
EOF
}

# node_launch starts node n and returns; node_ready waits for it.
node_launch() { # node
  local n=$1 dir pidfile from
  dir=$(node_dir "$n") pidfile=$(node_dir "$n")/pid
  if running "$pidfile"; then
    log "cluster node $n is already running (pid $(cat "$pidfile"))"
    return 0
  fi
  port_open "$(node_port "$n")" && die "port $(node_port "$n") is already in use by another process; set DEV_CLUSTER_PORT to a free range"
  node_write_config "$n"
  if [ ! -f "$dir/data/meta.properties" ]; then
    "${cluster_java[@]}" kafka.tools.StorageTool format -t "$(cat "$cluster_state/cluster-id")" \
      -c "$dir/server.properties" >"$dir/format.log" 2>&1 ||
      { cat "$dir/format.log" >&2; die "formatting cluster node $n's storage failed"; }
  fi
  from=$(($( [ -f "$dir/server.log" ] && stat -c %s "$dir/server.log" || echo 0) + 1))
  echo "$from" >"$dir/log-from"
  nohup "${cluster_java[@]}" -Dlog4j2.configurationFile="$dir/log4j2.properties" kafka.Kafka "$dir/server.properties" \
    >"$dir/stdout.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
}

node_ready() { # node
  local n=$1 dir i
  dir=$(node_dir "$n")
  for i in $(seq 1 $((start_timeout * 2))); do
    if ! running "$dir/pid"; then
      tail -n 40 "$dir/stdout.log" "$dir/server.log" >&2 2>/dev/null || true
      die "cluster node $n exited during start-up (logs above, full logs in $dir)"
    fi
    if port_open "$(node_port "$n")" && tail -c +"$(cat "$dir/log-from")" "$dir/server.log" 2>/dev/null | grep -q "Kafka Server started"; then
      log "cluster node $n is ready on 127.0.0.1:$(node_port "$n") (pid $(cat "$dir/pid"))"
      return 0
    fi
    sleep 0.5
  done
  die "cluster node $n did not become ready within ${start_timeout}s (logs in $dir)"
}

cluster_install() { kafka_install; }

cluster_start() {
  local n
  kafka_install
  mkdir -p "$cluster_state"
  [ -f "$cluster_state/cluster-id" ] ||
    "${cluster_java[@]}" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1 >"$cluster_state/cluster-id"
  log "starting a 3-node Apache Kafka $kafka_version cluster on $(cluster_bootstrap)"
  # The controllers elect a leader only once a majority is up: all start
  # before any is waited for.
  for n in $(seq 1 $cluster_nodes); do node_launch "$n"; done
  for n in $(seq 1 $cluster_nodes); do node_ready "$n"; done
}

cluster_stop() {
  local n
  # Brokers first, in parallel: the last controllers standing let each
  # broker's controlled shutdown finish.
  for n in $(seq 1 $cluster_nodes); do stop_pid "cluster node $n" "$(node_dir "$n")/pid" 30 & done
  wait
}

cluster_wipe() {
  local n
  for n in $(seq 1 $cluster_nodes); do
    running "$(node_dir "$n")/pid" && die "cluster node $n is running: stop the cluster before wiping its data"
  done
  rm -rf "$cluster_state"
}

cluster_status() {
  local n
  for n in $(seq 1 $cluster_nodes); do
    if running "$(node_dir "$n")/pid"; then
      echo "cluster node $n: running (pid $(cat "$(node_dir "$n")/pid"), 127.0.0.1:$(node_port "$n"))"
    else
      echo "cluster node $n: stopped"
    fi
  done
}

# node stop|kill|start N
node_command() {
  local op=${1:-} n=${2:-}
  case "$n" in 1 | 2 | 3) ;; *) die "node takes a node number, 1-$cluster_nodes: got '$n'" ;; esac
  case "$op" in
  stop) stop_pid "cluster node $n" "$(node_dir "$n")/pid" 60 ;;
  kill)
    running "$(node_dir "$n")/pid" || die "cluster node $n is not running"
    kill -9 "$(cat "$(node_dir "$n")/pid")"
    rm -f "$(node_dir "$n")/pid"
    log "cluster node $n killed (SIGKILL)"
    ;;
  start)
    if running "$(node_dir "$n")/pid"; then
      log "cluster node $n is already running (pid $(cat "$(node_dir "$n")/pid"))"
      return 0
    fi
    node_launch "$n" && node_ready "$n"
    ;;
  *) die "node takes stop, kill or start: got '$op'" ;;
  esac
}

tools_ready() {
  [ -x "$tools_bin/kafka-topics.sh" ] || tools_install >/dev/null 2>&1 || die "Kafka's tools could not be installed"
}

# leader TOPIC PARTITION prints the node that leads the partition.
leader_command() {
  local topic=${1:-} partition=${2:-}
  [ -n "$topic" ] && [ -n "$partition" ] || die "leader takes a topic and a partition"
  tools_ready
  "$tools_bin/kafka-topics.sh" --bootstrap-server "$(cluster_bootstrap)" --describe --topic "$topic" |
    awk -v p="$partition" '{for (i = 1; i < NF; i++) { if ($i == "Partition:") part = $(i+1); if ($i == "Leader:" && part == p) { print $(i+1); exit } }}'
}

# coordinator group|transaction ID prints the node that coordinates it.
coordinator_command() {
  local kind=${1:-} id=${2:-}
  [ -n "$id" ] || die "coordinator takes group or transaction, and an id"
  tools_ready
  case "$kind" in
  group)
    "$tools_bin/kafka-consumer-groups.sh" --bootstrap-server "$(cluster_bootstrap)" --describe --group "$id" --state |
      awk 'NR > 1 { for (i = 2; i <= NF; i++) if ($i ~ /^\([0-9]+\)$/) { gsub(/[()]/, "", $i); print $i; exit } }'
    ;;
  transaction)
    "$tools_bin/kafka-transactions.sh" --bootstrap-server "$(cluster_bootstrap)" describe --transactional-id "$id" |
      awk 'NR == 2 { print $1; exit }'
    ;;
  *) die "coordinator takes group or transaction: got '$kind'" ;;
  esac
}
