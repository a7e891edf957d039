%% Settings shared by the benchmark's modules (bench/shardnode_bench.erl
%% and the modules it uses).

%% how long a client waits for one reply
-define(CALL_TIMEOUT, 15000).
%% entities touched by the tell and ask figures
-define(HOT_ENTITIES, 10000).
%% echo payload
-define(ECHO_BYTES, 100).
%% shards of the two nodes of the rebalance figure
-define(REBALANCE_SHARDS, 100).
%% shards of the two nodes of the state-move figure (half of them move)
-define(MOVE_SHARDS, 200).
%% Erlang entities created for their memory figure (at most BENCH_ENTITIES)
-define(ERL_MEM_ENTITIES, 100000).
%% sequential calls of the Erlang-entity figure's one-call breakdown
-define(ERL_ONE_CALL_SAMPLES, 2000).
