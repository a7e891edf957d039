#!/usr/bin/env bash
# Five nodes, each in a network namespace of its own on one bridge (snbr0,
# 10.77.0.0/24, made here and removed on exit), a BEAM client in the root
# namespace streaming increments through every node, and one fault for
# HOLD ms (default 12000), then healed. Prints the stream's tally (ok:
# previous + 1; restart: 1 again after the entity moved; *_lost_ack: a reply
# that timed out, the increment applied; bad: anything else), the members
# lost, and the downing decisions. Needs root, iproute2 and iptables.
#
#   scripts/partition-scenarios.sh cut       # the n1-n3 link cut
#   scripts/partition-scenarios.sh lossy     # LOSS (default 0.3) of n3's packets dropped
#   scripts/partition-scenarios.sh split     # {n1,n2} | {n3,n4,n5}
#   scripts/partition-scenarios.sh isolate   # n1, the oldest, cut from all
#   scripts/partition-scenarios.sh kill      # kill -9 of n5
#
# The measuring tool the common_test partition suite is to grow from.
set -u
SCEN=${1:-cut}
BIN=$(cd "$(dirname "$0")/.." && pwd)/priv/shardnode
N=5
BR=snbr0
NET=10.77.0
D=$(mktemp -d)
cleanup() {
  for i in $(seq 1 $N); do [ -f $D/n$i.pid ] && kill -9 $(cat $D/n$i.pid) 2>/dev/null; done
  for i in $(seq 1 $N); do ip netns pids sn$i 2>/dev/null | xargs -r kill -9; ip netns del sn$i 2>/dev/null; done
  ip link del $BR 2>/dev/null
}
trap cleanup EXIT
cleanup
ip link add $BR type bridge && ip addr add $NET.254/24 dev $BR && ip link set $BR up
for i in $(seq 1 $N); do
  ip netns add sn$i
  ip link add snv$i type veth peer name eth0 netns sn$i
  ip link set snv$i master $BR up
  ip -n sn$i addr add $NET.$i/24 dev eth0
  ip -n sn$i link set eth0 up
  ip -n sn$i link set lo up
done
SET="--set heartbeat_interval_ms=200 --set failure_timeout_ms=1000 --set stable_after_ms=2000 --set retry_interval_ms=500 --set rebalance_interval_ms=300"
start() { (cd $D && ip netns exec sn$1 $BIN --name n$1@$NET.$1 --cookie c $SET $2 >> $D/n$1.log 2>&1 & echo $! > $D/n$1.pid); }
start 1 ""
sleep 0.5
for i in $(seq 2 $N); do start $i "--join n1@$NET.1"; sleep 0.2; done
fault() {
  case $SCEN in
    cut) ip netns exec sn1 iptables -A INPUT -s $NET.3 -j DROP; ip netns exec sn1 iptables -A OUTPUT -d $NET.3 -j DROP ;;
    lossy) ip netns exec sn3 iptables -A INPUT -s $NET.254 -j ACCEPT
           ip netns exec sn3 iptables -A OUTPUT -d $NET.254 -j ACCEPT
           ip netns exec sn3 iptables -A INPUT -m statistic --mode random --probability ${LOSS:-0.3} -j DROP
           ip netns exec sn3 iptables -A OUTPUT -m statistic --mode random --probability ${LOSS:-0.3} -j DROP ;;
    split) for a in 1 2; do for b in 3 4 5; do ip netns exec sn$a iptables -A INPUT -s $NET.$b -j DROP; ip netns exec sn$a iptables -A OUTPUT -d $NET.$b -j DROP; done; done ;;
    isolate) for b in 2 3 4 5; do ip netns exec sn1 iptables -A INPUT -s $NET.$b -j DROP; ip netns exec sn1 iptables -A OUTPUT -d $NET.$b -j DROP; done ;;
    kill) pkill -9 -f "shardnode --name n5@$NET.5" ;;
  esac
}
heal() { for i in $(seq 1 $N); do ip netns exec sn$i iptables -F; done; }
{ echo '#!/usr/bin/env bash'; declare -f fault heal; echo 'SCEN='$SCEN' NET='$NET' D='$D' N='$N' LOSS='${LOSS:-0.3}; echo '"$1"'; } > $D/ctl.sh; chmod +x $D/ctl.sh
erl -name ctl@$NET.254 -setcookie c -noshell -eval "
Nodes = [list_to_atom(\"n\" ++ integer_to_list(I) ++ \"@$NET.\" ++ integer_to_list(I)) || I <- lists:seq(1,$N)],
Until = fun Loop(F, Deadline) -> case catch F() of true -> ok; Other -> case erlang:monotonic_time(millisecond) > Deadline of true -> {stuck, Other}; false -> timer:sleep(100), Loop(F, Deadline) end end end,
Up = fun(Ns) -> fun() -> lists:all(fun(N) -> {ok, Ms} = gen_server:call({shardnode, N}, members, 1000), lists:sort([M || #{node := M, status := up} <- Ms]) =:= lists:sort(Ns) end, Ns) end end,
io:format(\"converged ~p~n\", [Until(Up(Nodes), erlang:monotonic_time(millisecond) + 30000)]),
%% A stream: 40 counters, incremented through every node in turn; acks checked as previous+1.
Tab = ets:new(t, [public]),
Stream = fun Loop(K, Stats) -> receive stop -> Stats after 0 ->
   Id = K rem 40, N = lists:nth(1 + K rem $N, Nodes),
   S2 = try gen_server:call({counter, N}, {Id, incr}, 1000) of
          V -> Prev = case ets:lookup(Tab, Id) of [{_, P}] -> P; [] -> 0 end,
               ets:insert(Tab, {Id, V}),
               Kind = if V =:= Prev + 1 -> ok; V =:= 1 -> restart; V > Prev + 1 -> after_lost_ack; V < Prev -> restart_after_lost_ack; true -> {bad, Prev, V} end,
               maps:update_with(Kind, fun(X) -> X + 1 end, 1, Stats)
        catch exit:{timeout, _} -> maps:update_with(timeout, fun(X) -> X + 1 end, 1, Stats);
              exit:_ -> maps:update_with(error, fun(X) -> X + 1 end, 1, Stats)
        end,
   Loop(K + 1, S2) end end,
Self = self(),
P = spawn(fun() -> Self ! {stats, Stream(0, #{})} end),
timer:sleep(2000),
os:cmd(\"$D/ctl.sh fault\"),
T0 = erlang:monotonic_time(millisecond),
timer:sleep(${HOLD:-12000}),
os:cmd(\"$D/ctl.sh heal\"),
Alive = [N || N <- Nodes, pong =:= net_adm:ping(N)],
io:format(\"alive after fault ~p~n\", [Alive]),
timer:sleep(4000),
P ! stop,
receive {stats, St} -> io:format(\"stream ~p~n\", [St]) end,
Down = [N || N <- Nodes, not lists:member(N, Alive)],
io:format(\"members lost ~p: ~p~n\", [length(Down), Down]),
halt()."
grep -h 'downing\|keep-majority' $D/*.log | cut -c1-200
