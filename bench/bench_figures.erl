%% The benchmark's figures on paper: time units, percentiles and medians,
%% number formatting, the progress lines printed while it runs, and the
%% header and the table (shardnode, BEAM, their ratio) printed by
%% shardnode_bench. bench/README.md documents the table.
-module(bench_figures).

-export([us/1, percentile/2, median/1, medians/1,
         progress/3, fmt/1,
         print_header/1, print_table/3, loadavg/0]).

-include("bench.hrl").

%%====================================================================
%% Statistics and output
%%====================================================================

us(Native) ->
    erlang:convert_time_unit(Native, native, nanosecond) / 1000.

percentile([], _Q) ->
    erlang:error(no_samples);
percentile(Sorted, Q) ->
    N = length(Sorted),
    lists:nth(max(1, min(N, ceil(Q * N))), Sorted).

median(Values) ->
    Sorted = lists:sort(Values),
    N = length(Sorted),
    case N rem 2 of
        1 -> lists:nth(N div 2 + 1, Sorted);
        0 -> (lists:nth(N div 2, Sorted) + lists:nth(N div 2 + 1, Sorted)) / 2
    end.

medians([M | _] = Maps) ->
    maps:from_list([{K, median([maps:get(K, X) || X <- Maps])} || K <- maps:keys(M)]).

progress(What, Fmt, Args) ->
    io:format("  ~-14s " ++ Fmt ++ "~n", [lists:flatten(What) | Args]).

fmt(X) when is_float(X), abs(X) >= 100 -> fmt(round(X));
fmt(X) when is_float(X), abs(X) >= 10 -> float_to_list(X, [{decimals, 1}]);
fmt(X) when is_float(X) -> float_to_list(X, [{decimals, 2}]);
fmt(X) when is_integer(X), X < 0 -> [$- | fmt(-X)];
fmt(X) when is_integer(X) -> thousands(integer_to_list(X)).

thousands(Digits) when length(Digits) =< 3 ->
    Digits;
thousands(Digits) ->
    Head = length(Digits) rem 3,
    {H, T} = lists:split(case Head of 0 -> 3; _ -> Head end, Digits),
    H ++ [[$\s | G] || G <- groups(T)].

groups([]) -> [];
groups([A, B, C | T]) -> [[A, B, C] | groups(T)].

print_header(#{rounds := R, entities := E, seconds := S, clients := C, window := W,
               c_window := CW}) ->
    io:format("shardnode vs BEAM baseline~n"
              "machine: ~s, ~b cores, ~s, OTP ~s (erts ~s)~n"
              "settings: ~b rounds, ~b clients, window ~b tells per client, ~b s per "
              "throughput figure, ~s hot entities, ~s entities for memory,~n"
              "          C load generator window ~b calls per client~n"
              "load average (1, 5, 15 min): ~s~n",
              [machine(), erlang:system_info(logical_processors_available), cpu_model(),
               erlang:system_info(otp_release), erlang:system_info(version),
               R, C, W, S, fmt(?HOT_ENTITIES), fmt(E), CW, loadavg()]).

machine() ->
    string:trim(os:cmd("uname -m")).

cpu_model() ->
    case file:read_file("/proc/cpuinfo") of
        {ok, Bin} ->
            case re:run(Bin, "^model name\\s*:\\s*(.*)$", [multiline, {capture, [1], list}]) of
                {match, [Model]} -> string:trim(Model);
                nomatch -> "unknown CPU"
            end;
        _ ->
            "unknown CPU"
    end.

print_table(S, B, #{entities := E, clients := C, window := W, c_window := CW,
                    c_durable_window := DW, c_pg_window := PW, client_nodes := LN}) ->
    Rows =
        [{io_lib:format("tell throughput, msg/s (~b clients, ~s counters)", [C, fmt(?HOT_ENTITIES)]),
          tell_rate, higher},
         {"CPU of the system per tell, us (its OS process, user + sys)", tell_cpu, lower},
         {io_lib:format("ask throughput, calls/s (~b clients, counter get)", [C]), ask_rate, higher},
         {"ask latency p50, us", ask_p50, lower},
         {"ask latency p99, us", ask_p99, lower},
         {"CPU of the system per ask, us", ask_cpu, lower},
         {io_lib:format("tell throughput, msg/s, the same clients spread over ~b load nodes", [LN]),
          spread_tell_rate, higher},
         {io_lib:format("CPU of the system per tell, us (~b load nodes)", [LN]), spread_tell_cpu, lower},
         {io_lib:format("ask throughput, calls/s, the same clients spread over ~b load nodes", [LN]),
          spread_ask_rate, higher},
         {io_lib:format("ask latency p50, us (~b load nodes)", [LN]), spread_ask_p50, lower},
         {io_lib:format("ask latency p99, us (~b load nodes)", [LN]), spread_ask_p99, lower},
         {io_lib:format("CPU of the system per ask, us (~b load nodes)", [LN]), spread_ask_cpu, lower},
         {"one calling node, 16 processes: gen_server:call calls/s (counter get)", client_gen_rate, higher},
         {"  the calling node's CPU per call, us", client_gen_cpu, lower},
         {"one calling node, 16 processes: shardnode:call calls/s", client_call_rate, higher},
         {"  the calling node's CPU per call, us", client_call_cpu, lower},
         {"  over gen_server:call's rate to the same system (shardnode target >= 2)", client_call_ratio, higher},
         {"one calling node, 16 processes: multi_call of 100, calls/s", client_multi_rate, higher},
         {"  the calling node's CPU per call, us", client_multi_cpu, lower},
         {"  over gen_server:call's rate to the same system (shardnode target >= 10)", client_multi_ratio, higher},
         {"one call alone, gen_server:call, us median (one caller, sequential)", client_gen_one_us, lower},
         {"one call alone, shardnode:call, us median", client_call_one_us, lower},
         {io_lib:format("ask echo ~b B throughput, calls/s", [?ECHO_BYTES]), echo_rate, higher},
         {io_lib:format("ask echo ~b B latency p50, us", [?ECHO_BYTES]), echo_p50, lower},
         {io_lib:format("ask echo ~b B latency p99, us", [?ECHO_BYTES]), echo_p99, lower},
         {io_lib:format("memory per idle entity, bytes (~s counters)", [fmt(E)]), mem_per_entity, lower},
         {io_lib:format("entity creation by tell, entities/s (filling ~s)", [fmt(E)]), create_rate, higher},
         {"first message, us median: shardnode new shard (coordinator) / BEAM new entity",
          first_new_shard, lower},
         {"first message to a new entity in a hosted shard, us median", first_hosted_shard, lower},
         {io_lib:format("C load generator: ask calls/s (~b clients x ~b in flight, counter incr)",
                        [C, CW]), c_ask_rate, higher},
         {"C load generator: ask latency p50, us", c_ask_p50, lower},
         {"C load generator: ask latency p99, us", c_ask_p99, lower},
         {"C load generator: CPU of the system per ask, us", c_ask_cpu, lower},
         {io_lib:format("C load generator: tells/s (~b clients x ~b unanswered)", [C, W]),
          c_tell_rate, higher},
         {"C load generator: CPU of the system per tell, us", c_tell_cpu, lower},
         {io_lib:format("Erlang entities on a host (shardnode_entity) vs BEAM gen_server entities: "
                        "tell msg/s (~b clients, ~s counters)", [C, fmt(?HOT_ENTITIES)]), erl_tell_rate, higher},
         {"Erlang entities: CPU per tell, us (C node + host vs BEAM node)", erl_tell_cpu, lower},
         {io_lib:format("Erlang entities: ask calls/s (~b clients, get)", [C]), erl_ask_rate, higher},
         {"Erlang entities: ask latency p50, us", erl_ask_p50, lower},
         {"Erlang entities: ask latency p99, us", erl_ask_p99, lower},
         {"Erlang entities: CPU per ask, us (C node + host vs BEAM node)", erl_ask_cpu, lower},
         {"Erlang entities: memory per idle entity, bytes (C node + host vs BEAM node)", erl_mem, lower},
         {io_lib:format("Erlang entities: tell msg/s, the clients spread over ~b load nodes", [LN]),
          erl_spread_tell_rate, higher},
         {io_lib:format("Erlang entities: CPU per tell, us (~b load nodes; C node + host vs BEAM node)", [LN]),
          erl_spread_tell_cpu, lower},
         {io_lib:format("Erlang entities: ask calls/s, the clients spread over ~b load nodes", [LN]),
          erl_spread_ask_rate, higher},
         {io_lib:format("Erlang entities: ask latency p50, us (~b load nodes)", [LN]), erl_spread_ask_p50, lower},
         {io_lib:format("Erlang entities: ask latency p99, us (~b load nodes)", [LN]), erl_spread_ask_p99, lower},
         {io_lib:format("Erlang entities: CPU per ask, us (~b load nodes; C node + host vs BEAM node)", [LN]),
          erl_spread_ask_cpu, lower},
         {io_lib:format("Erlang entities, C load generator: ask calls/s (~b clients x ~b in flight, incr)", [C, CW]),
          erl_c_ask_rate, higher},
         {"Erlang entities, C load generator: ask latency p50, us", erl_c_ask_p50, lower},
         {"Erlang entities, C load generator: ask latency p99, us", erl_c_ask_p99, lower},
         {"Erlang entities, C load generator: CPU per ask, us (C node + host vs BEAM node)", erl_c_ask_cpu, lower},
         {io_lib:format("Erlang entities, C load generator: tells/s (~b clients x ~b unanswered)", [C, W]),
          erl_c_tell_rate, higher},
         {"Erlang entities, C load generator: CPU per tell, us (C node + host vs BEAM node)", erl_c_tell_cpu, lower},
         {"TLS, C load generator: ask calls/s (as the plain row above)", tls_ask_rate, higher},
         {"TLS, C load generator: CPU of the system per ask, us", tls_ask_cpu, lower},
         {"TLS: CPU per ask over the same system's plain CPU per ask (shardnode target <= 1.5)",
          tls_ask_cpu_ratio, lower},
         {"TLS, C load generator: tells/s", tls_tell_rate, higher},
         {"TLS, C load generator: CPU of the system per tell, us", tls_tell_cpu, lower},
         {"TLS: CPU per tell over the same system's plain CPU per tell (shardnode target <= 1.5)",
          tls_tell_cpu_ratio, lower}],
    io:format("| figure | shardnode | BEAM | ratio | ratio is |~n"
              "|---|---:|---:|---:|---|~n"),
    [begin
         Sv = maps:get(Key, S),
         Bv = maps:get(Key, B),
         {Ratio, Reads} = case Better of
                              higher -> {Sv / Bv, "shardnode/BEAM"};
                              lower -> {Bv / Sv, "BEAM/shardnode"}
                          end,
         io:format("| ~s | ~s | ~s | ~.2f | ~s |~n", [Label, fmt(Sv), fmt(Bv), Ratio, Reads])
     end || {Label, Key, Better} <- Rows, maps:is_key(Key, S), maps:is_key(Key, B)],
    %% no BEAM baseline does this job
    [io:format("| ~s | ~s | n/a | n/a | - |~n", [Label, fmt(maps:get(Key, S))])
     || {Label, Key} <- lists:filter(fun({_, K}) -> maps:is_key(K, S) end,
            [{io_lib:format("rebalance time for ~b shards, ms (second node up -> ~b on each node)",
                            [?REBALANCE_SHARDS, ?REBALANCE_SHARDS div 2]), rebalance_from_up},
             {io_lib:format("rebalance time for ~b shards, ms (second node started -> ~b on each node)",
                            [?REBALANCE_SHARDS, ?REBALANCE_SHARDS div 2]), rebalance_from_start},
             {io_lib:format("lmdb, C load generator: durable incr calls/s (~b clients x ~b in flight)",
                            [C, DW]), durable_c_rate},
             {"lmdb, C load generator: durable incr latency p50, us", durable_c_p50},
             {"lmdb, C load generator: durable incr latency p99, us", durable_c_p99},
             {"lmdb, C load generator: CPU of the system per durable incr, us", durable_c_cpu},
             {io_lib:format("lmdb: durable incr calls/s, ~b clients on ~b load nodes", [C, LN]),
              durable_load_rate},
             {io_lib:format("lmdb: durable incr latency p50, us (~b load nodes)", [LN]), durable_load_p50},
             {io_lib:format("lmdb: durable incr latency p99, us (~b load nodes)", [LN]), durable_load_p99},
             {io_lib:format("lmdb, 2 nodes, state_replicas = 1, C load generator: durable incr calls/s "
                            "(~b clients x ~b in flight; target >= 250000)", [C, DW]), repl_c_rate},
             {"lmdb, 2 nodes, state_replicas = 1: durable incr latency p50, us", repl_c_p50},
             {"lmdb, 2 nodes, state_replicas = 1: durable incr latency p99, us (target <= 10000)", repl_c_p99},
             {"lmdb, 2 nodes, state_replicas = 1: CPU of both nodes per durable incr, us", repl_c_cpu},
             {"fail-over: kill -9 of a home -> first acknowledged increment on its replica, ms", failover_ms},
             {"  of it after the member was seen unreachable (failure_timeout_ms = 1000 before)",
              failover_after_unreachable_ms},
             {"  of it after the member was down (target <= 1000)", failover_after_down_ms},
             {"lmdb, Zipf(1.0) keys, no limit (all in memory): get calls/s", limit_mem_rate},
             {"lmdb, Zipf(1.0) keys, max_active_entities = ids / 10, LRU: get calls/s", limit_lru_rate},
             {"lmdb, Zipf(1.0) keys, max_active_entities = ids / 10, LRU: hit rate, %", limit_lru_hit},
             {"lmdb, Zipf(1.0) keys, max_active_entities = ids / 10, LRU + frequency (default): get calls/s "
              "(target >= half of all in memory)", limit_zipf_rate},
             {"lmdb, Zipf(1.0) keys, max_active_entities = ids / 10, LRU + frequency: latency p99, us",
              limit_zipf_p99},
             {"lmdb, Zipf(1.0) keys, max_active_entities = ids / 10, LRU + frequency: hit rate, % (target >= LRU's)",
              limit_zipf_hit},
             {"lmdb, uniform keys over 10x the limit: get calls/s, 9 in 10 loaded (target >= 300000)", limit_uniform_rate},
             {"lmdb, uniform keys over 10x the limit: latency p99, us", limit_uniform_p99},
             {"lmdb, uniform keys over 10x the limit: hit rate, %", limit_uniform_hit},
             {"fail-over, 5 members, default timings: kill -9 of one under load -> every id it homed answers, ms",
              failover5_ms},
             {"  of it after the member was seen unreachable (failure_timeout_ms = 5000 before)",
              failover5_after_unreachable_ms},
             {"  of it after the member was down (stable_after_ms = 10000 before; target <= 1000)",
              failover5_after_down_ms},
             {io_lib:format("postgres, C load generator: durable incr calls/s (~b clients x ~b in flight)",
                            [C, PW]), pg_c_rate},
             {"postgres, C load generator: durable incr latency p50, us", pg_c_p50},
             {"postgres, C load generator: durable incr latency p99, us", pg_c_p99},
             {"postgres, C load generator: CPU of the system per durable incr, us", pg_c_cpu},
             {"postgres: raw pgbench rate, upserts/s (one connection, pipelined transactions of 200)",
              pg_raw_rate},
             {"postgres, a primary with a synchronous standby: durable incr calls/s (C load generator, as above)",
              pg_sync_rate},
             {"  over the single server's rate", pg_sync_ratio},
             {"postgres, a primary with a synchronous standby: durable incr latency p99, us", pg_sync_p99},
             {"postgres, a primary with a synchronous standby: CPU of the node per durable incr, us", pg_sync_cpu},
             {io_lib:format("state move: ~s counters in ~b shards to a joining node, ms (up -> balanced)",
                            [fmt(E), ?MOVE_SHARDS div 2]), move_ms},
             {"state move: p99 of other traffic meanwhile, us (get calls to shards not moving)",
              move_other_p99},
             {"singleton hand-over, ms (leave of the oldest -> first answer from the next oldest)",
              singleton_handover_ms},
             {"Erlang entities: the C node's CPU per tell, us (target <= 1)", erl_tell_cpu_c},
             {"Erlang entities: one call alone, round trip, us median (one caller, sequential)", erl_one_call_us},
             {"  the same to a C type on the same node, us median", erl_one_call_c_type_us},
             {"  of the first: in the C node from reading the call to writing its reply, us mean", erl_one_call_node_us},
             {"  of that: at the host, from the sending to the process to the completion's arrival, us mean",
              erl_one_call_host_us},
             {"Erlang entities: the host's CPU per tell, us", erl_tell_cpu_host},
             {io_lib:format("Erlang entities: the C node's CPU per tell, us (~b load nodes; target <= 1)", [LN]),
              erl_spread_tell_cpu_c},
             {io_lib:format("Erlang entities: the C node's CPU per ask, us (~b load nodes; target <= 1)", [LN]),
              erl_spread_ask_cpu_c},
             {"Erlang entities: the C node's CPU per ask, us (target <= 1)", erl_ask_cpu_c},
             {"Erlang entities: the host's CPU per ask, us", erl_ask_cpu_host},
             {"Erlang entities, C load generator: the C node's CPU per ask, us (target <= 1)", erl_c_ask_cpu_c},
             {"Erlang entities, C load generator: the C node's CPU per tell, us (target <= 1)", erl_c_tell_cpu_c},
             {"Erlang entities: the callers' CPU per ask, us (the controller's client processes)",
              erl_ask_cpu_caller},
             {io_lib:format("Erlang entities: memory per idle entity on the C node, bytes (~s entities)",
                            [fmt(min(E, ?ERL_MEM_ENTITIES))]), erl_mem_c},
             {"Erlang entities: memory per idle entity on the host, bytes", erl_mem_host},
             {"TLS at an equal offered rate (asks 400 000/s): CPU per ask over plain's (target <= 1.5)",
              tls_paced_ask_cpu_ratio},
             {"TLS at an equal offered rate (tells 800 000/s): CPU per tell over plain's (target <= 1.5)",
              tls_paced_tell_cpu_ratio},
             {"metrics off, C load generator: ask calls/s", metrics_off_ask_rate},
             {"metrics on (scraped every second), C load generator: ask calls/s", metrics_on_ask_rate},
             {"metrics on/off: ask throughput (target >= 0.97)", metrics_ask_ratio},
             {"metrics on/off: CPU per ask", metrics_ask_cpu_ratio},
             {"metrics off, C load generator: tells/s", metrics_off_tell_rate},
             {"metrics on (scraped every second), C load generator: tells/s", metrics_on_tell_rate},
             {"metrics on/off: tell throughput (target >= 0.97)", metrics_tell_ratio},
             {"metrics on/off: CPU per tell", metrics_tell_cpu_ratio},
             {"metrics on/off at an equal offered rate (asks 400 000/s): CPU per ask", metrics_paced_ask_cpu_ratio},
             {"metrics on/off at an equal offered rate (tells 800 000/s): CPU per tell", metrics_paced_tell_cpu_ratio},
             {"metrics page: series", metrics_series},
             {"metrics page: render time on the loop, us (its /proc reads included)", metrics_render_us},
             {"metrics page writer alone: 10 000 series, us (bench/prom_render_bench.c; target <= 1000)",
              metrics_render_10k_us}]
            ++ lists:append(
                 [[{io_lib:format("~b members at once: formed, ms (all list all up)", [N]), {scale_formed_ms, N}},
                   {io_lib:format("~b members: idle CPU per member, ms/s", [N]), {scale_idle_cpu_ms, N}},
                   {io_lib:format("~b members: distribution packets per member (in and out), per s", [N]),
                    {scale_packets_per_s, N}},
                   {io_lib:format("~b members: resident memory per member, MB", [N]), {scale_rss_mb, N}},
                   {io_lib:format("~b members: kill -9 of one -> listed down, ms", [N]), {scale_down_ms, N}}]
                  || N <- lists:usort([N || {scale_formed_ms, N} <- maps:keys(S)])]))],
    ok.

%% Everything else running on the machine shares its cores with the three
%% nodes measured here; the load average says how much there was.
loadavg() ->
    case file:read_file("/proc/loadavg") of
        {ok, Bin} -> lists:join(" ", lists:sublist(string:lexemes(binary_to_list(Bin), " "), 3));
        _ -> "unknown"
    end.
