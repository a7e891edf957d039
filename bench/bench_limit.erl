%% max_active_entities (docs/contract.md "Entity state") under the C load
%% generator, every node with state_store = lmdb, ids 1..N (BENCH_LIMIT_IDS,
%% 500 000) each given a stored state first (the generator's incr calls
%% cycling through them), then asked `get' calls — reads, so that the
%% figures are those of finding an entity live or loading it, not of
%% writing random keys (a durable incr of a random key among 500 000 costs
%% LMDB a page write of its own: that rate is the disk's):
%%   - Zipf(1.0) keys, no limit: every entity once asked stays live (the
%%     all-in-memory rate);
%%   - Zipf(1.0) keys, max_active_entities = N / 10, by recency alone
%%     (max_active_by_frequency = false: the least recently used
%%     passivated beyond it, loaded again when asked), then by recency and
%%     frequency (the default: the least often asked of the 8 least
%%     recently used);
%%   - uniform keys over the N ids with the same limit: nine asks in ten
%%     find their entity passivated and load it (the miss rate).
%% Each measured run follows a warm-up run of the same length. The hit rate
%% is 1 - store loads / asks over the measured run (metrics page deltas):
%% the share of asks that found their entity live.
-module(bench_limit).

-export([figures/1]).

-define(WINDOW, 16).

figures(#{seconds := Secs} = Cfg) ->
    Ids = bench_env_ids(),
    Limit = Ids div 10,
    Mem = run(Cfg, Ids, 0, true, "zipf:1.0"),
    Lru = run(Cfg, Ids, Limit, false, "zipf:1.0"),
    Zipf = run(Cfg, Ids, Limit, true, "zipf:1.0"),
    Uniform = run(Cfg, Ids, Limit, true, "uniform"),
    Row = fun(What, #{rate := R, p99 := P99, hit := Hit}) ->
                  bench_figures:progress(What, "~s get/s, p99 ~s us, hit rate ~s% (~b ids, ~b s)",
                                         [bench_figures:fmt(R), bench_figures:fmt(P99),
                                          bench_figures:fmt(100 * Hit), Ids, Secs])
          end,
    Row("zipf, no limit", Mem),
    Row("zipf, LRU", Lru),
    Row("zipf, LRU+freq", Zipf),
    Row("uniform, limit", Uniform),
    #{limit_mem_rate => maps:get(rate, Mem), limit_lru_rate => maps:get(rate, Lru),
      limit_lru_hit => 100 * maps:get(hit, Lru), limit_zipf_rate => maps:get(rate, Zipf),
      limit_zipf_p99 => maps:get(p99, Zipf), limit_zipf_hit => 100 * maps:get(hit, Zipf),
      limit_uniform_rate => maps:get(rate, Uniform), limit_uniform_p99 => maps:get(p99, Uniform),
      limit_uniform_hit => 100 * maps:get(hit, Uniform)}.

bench_env_ids() ->
    case os:getenv("BENCH_LIMIT_IDS") of
        V when V =:= false; V =:= "" -> 500000;
        V -> list_to_integer(V)
    end.

run(Cfg, Ids, Limit, ByFrequency, Keys) ->
    Port = shardnode_ct:free_port(),
    Config = #{state_store => lmdb, max_active_entities => Limit, max_active_by_frequency => ByFrequency,
               metrics_port => Port},
    bench_nodes:with_node(
      shardnode, Config, Cfg,
      fun(Sys) ->
              %% every id a stored state: the generator cycles through them
              %% (16 clients, each from its own part) for long enough
              Fill = Cfg#{seconds := max(2, Ids div 60000),
                          c_loadgen_args => ["--entities", integer_to_list(Ids), "--keys", "cycle"]},
              _ = bench_load:c_loadgen(Sys, ask, ?WINDOW, Fill),
              Load = Cfg#{c_loadgen_args => ["--entities", integer_to_list(Ids), "--keys", Keys, "--msg", "get"]},
              _ = bench_load:c_loadgen(Sys, ask, ?WINDOW, Load),
              {Asks0, Loads0} = counts(Port),
              #{"calls_per_s" := Rate, "p99_us" := P99} = bench_load:c_loadgen(Sys, ask, ?WINDOW, Load),
              {Asks1, Loads1} = counts(Port),
              bench_figures:progress("limit " ++ Keys, "~b asks, ~b loads (max_active_entities ~b)",
                                     [Asks1 - Asks0, Loads1 - Loads0, Limit]),
              #{rate => Rate, p99 => P99, hit => 1 - (Loads1 - Loads0) / max(1, Asks1 - Asks0)}
      end).

counts(Port) ->
    {ok, Page} = shardnode_ct:metrics_page(Port),
    {shardnode_ct:metric_value(Page, <<"shardnode_messages_total{type=\"counter\",kind=\"ask\"}">>),
     shardnode_ct:metric_value(Page, <<"shardnode_store_loads_total{type=\"counter\"}">>)}.
