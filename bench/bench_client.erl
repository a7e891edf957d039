%% The calling side, from ONE BEAM node (the controller) with 16 processes
%% asking counters, on either system:
%%   - gen_server:call({counter, Node}, {Id, get}): a monitor, the request
%%     and a demonitor out, the reply back, per call;
%%   - shardnode:call(Node, counter, Id, get): through the node's client
%%     (erl_wrapper/src/shardnode_client.erl), the calls of one moment in
%%     one message, the replies of one turn of the C node in one message;
%%   - shardnode:multi_call(Node, counter, [100 requests]): 100 calls per
%%     message, counted as 100 calls.
%% The BEAM baseline is called the same ways: its region (bench_region)
%% takes the client's batch of calls too, and its entities answer each call
%% on its own, as gen_server entities do. Also: one call alone (one caller,
%% sequential) by gen_server:call and by shardnode:call, median round trip;
%% and the calling node's CPU per call in each way (where the pace is set).
-module(bench_client).

-export([figures/2]).

-include("bench.hrl").

-define(PROCS, 16).
-define(MULTI, 100).
-define(ONE_SAMPLES, 2000).

figures(#{node := Node} = Sys, #{seconds := Secs}) ->
    bench_load:fill(Sys, counter, incr, 1, ?HOT_ENTITIES, ?PROCS, 16),
    Gen = fun(Id) -> gen_server:call({counter, Node}, {Id, get}, ?CALL_TIMEOUT) end,
    Client = fun(Id) -> shardnode:call(Node, counter, Id, get, ?CALL_TIMEOUT) end,
    Multi = fun(Id) ->
                    shardnode:multi_call(Node, counter, [{(Id + K) rem ?HOT_ENTITIES + 1, get}
                                                         || K <- lists:seq(0, ?MULTI - 1)], ?CALL_TIMEOUT)
            end,
    %% the client's first call starts it and monitors the region: not timed
    check(Client(1)),
    {GenRate, GenCpu} = rate(Gen, 1, Secs),
    {ClientRate, ClientCpu} = rate(Client, 1, Secs),
    {MultiRate, MultiCpu} = rate(Multi, ?MULTI, Secs),
    GenOne = one_call(Gen),
    ClientOne = one_call(Client),
    P = fun(What, Rate, Cpu) ->
                bench_figures:progress(What, "~s calls/s, ~s us of the calling node's CPU per call",
                                       [bench_figures:fmt(Rate), bench_figures:fmt(Cpu)])
        end,
    P("gen_server:call, 16 procs", GenRate, GenCpu),
    P("shardnode:call, 16 procs", ClientRate, ClientCpu),
    P("multi_call of 100, 16 procs", MultiRate, MultiCpu),
    bench_figures:progress("one call alone", "gen_server:call ~s us, shardnode:call ~s us (median)",
                           [bench_figures:fmt(GenOne), bench_figures:fmt(ClientOne)]),
    #{client_gen_rate => GenRate, client_gen_cpu => GenCpu,
      client_call_rate => ClientRate, client_call_cpu => ClientCpu,
      client_multi_rate => MultiRate, client_multi_cpu => MultiCpu,
      client_call_ratio => ClientRate / GenRate, client_multi_ratio => MultiRate / GenRate,
      client_gen_one_us => GenOne, client_call_one_us => ClientOne}.

%% 16 processes calling Ask(Id) back to back for Secs seconds, each Ask
%% worth PerAsk calls. Returns calls per second and the calling node's CPU
%% (user + sys of its OS process) per call.
rate(Ask, PerAsk, Secs) ->
    Me = list_to_integer(os:getpid()),
    Cpu0 = bench_nodes:cpu_us(Me),
    Start = erlang:monotonic_time(),
    Deadline = Start + erlang:convert_time_unit(Secs, second, native),
    Counts = bench_load:run_clients([fun() -> loop(Ask, I * 997, Deadline, 0) end
                                     || I <- lists:seq(0, ?PROCS - 1)]),
    Elapsed = bench_figures:us(erlang:monotonic_time() - Start) / 1.0e6,
    Calls = lists:sum(Counts) * PerAsk,
    {Calls / Elapsed, (bench_nodes:cpu_us(Me) - Cpu0) / Calls}.

loop(Ask, K, Deadline, N) ->
    case erlang:monotonic_time() < Deadline of
        true ->
            check(Ask(K rem ?HOT_ENTITIES + 1)),
            loop(Ask, K + 1, Deadline, N + 1);
        false ->
            N
    end.

check(N) when is_integer(N) -> ok;
check([N | _] = L) when is_integer(N), length(L) =:= ?MULTI -> ok;
check(Other) -> erlang:error({bad_reply, Other}).

one_call(Ask) ->
    bench_figures:median([begin
                              T0 = erlang:monotonic_time(),
                              check(Ask(K)),
                              bench_figures:us(erlang:monotonic_time() - T0)
                          end || K <- lists:seq(1, ?ONE_SAMPLES)]).
