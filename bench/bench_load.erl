%% The benchmark's load: tells and asks from client processes, on the
%% controller or spread over the load nodes, and runs of the C load
%% generator (build/bench/c_loadgen). Used by shardnode_bench; every
%% function works on either system, `#{system := shardnode | beam, node :=
%% Node}', and returns what it measured.
%%
%% The client processes run the funs of this module, also on the load
%% nodes, which therefore have build/bench/ in their code path.
-module(bench_load).

-export([ask_one/4, timed_call/4,
         fill/7, tell_rate/7, tell_rate/8, ask/6, ask/7,
         c_loadgen/4, run_clients/1]).

-include("bench.hrl").

%%====================================================================
%% One message
%%====================================================================

%% A tell: shardnode sees the sender in the distribution header; the
%% baseline's region needs the reply-to pid in the message.
tell(#{system := shardnode, node := Node}, Type, Id, Msg) ->
    {Type, Node} ! {Id, Msg};
tell(#{system := beam, node := Node}, Type, Id, Msg) ->
    {Type, Node} ! {Id, Msg, self()}.

ask_one(#{node := Node}, Type, Id, Msg) ->
    gen_server:call({Type, Node}, {Id, Msg}, ?CALL_TIMEOUT).

%% One ask, timed: its round trip in microseconds.
timed_call(Sys, Type, Id, Msg) ->
    T0 = erlang:monotonic_time(),
    _ = ask_one(Sys, Type, Id, Msg),
    bench_figures:us(erlang:monotonic_time() - T0).

%%====================================================================
%% Tells
%%====================================================================

%% Tells Msg once to each of the ids From..From+Count-1, the ids split
%% into one contiguous range per client, each client keeping at most Window
%% tells unanswered; returns once every reply is in, with the seconds it
%% took.
fill(Sys, Type, Msg, From, Count, Clients, Window) ->
    Per = Count div Clients,
    Ranges = [{From + I * Per,
               case I of
                   _ when I =:= Clients - 1 -> Count - I * Per;
                   _ -> Per
               end} || I <- lists:seq(0, Clients - 1)],
    Start = erlang:monotonic_time(),
    Results = run_clients([fun() -> fill_client(Sys, Type, Msg, First, N, Window) end
                           || {First, N} <- Ranges, N > 0]),
    Count = lists:sum(Results),
    bench_figures:us(erlang:monotonic_time() - Start) / 1.0e6.

fill_client(Sys, Type, Msg, First, N, Window) ->
    Last = First + N - 1,
    Initial = min(Window, N),
    [tell(Sys, Type, Id, Msg) || Id <- lists:seq(First, First + Initial - 1)],
    fill_loop(Sys, Type, Msg, First + Initial, Last, Initial, 0).

fill_loop(_Sys, _Type, _Msg, _Next, _Last, 0, Got) ->
    Got;
fill_loop(Sys, Type, Msg, Next, Last, Out, Got) ->
    receive
        {Type, _Id, Reply} ->
            check_reply(Type, Reply),
            case Next =< Last of
                true ->
                    tell(Sys, Type, Next, Msg),
                    fill_loop(Sys, Type, Msg, Next + 1, Last, Out, Got + 1);
                false ->
                    fill_loop(Sys, Type, Msg, Next, Last, Out - 1, Got + 1)
            end
    after ?CALL_TIMEOUT ->
            erlang:error({tell_replies_missing, Out})
    end.

check_reply(counter, N) when is_integer(N) -> ok;
check_reply(ecounter, N) when is_integer(N) -> ok;
check_reply(echo, B) when is_binary(B) -> ok;
check_reply(_Type, Other) -> erlang:error({bad_reply, Other}).

%% Clients tell Msg to the hot entities (each client starting at its own
%% offset and cycling through all of them), each keeping Window tells
%% unanswered, for Secs seconds; then they stop sending and wait for the
%% replies still due. Messages per second = replies / time to the last one.
tell_rate(Sys, Type, Msg, NEnt, Clients, Window, Secs) ->
    tell_rate(Sys, Type, Msg, NEnt, Clients, Window, Secs, [node()]).

%% The same with the clients spread over Nodes. erlang:monotonic_time/0 is
%% the same clock on every node of one machine, so the deadline and the
%% clients' end times are comparable with Start.
tell_rate(Sys, Type, Msg, NEnt, Clients, Window, Secs, Nodes) ->
    Start = erlang:monotonic_time(),
    Deadline = Start + erlang:convert_time_unit(Secs, second, native),
    Results = run_clients([fun() ->
                                   Offset = I * NEnt div Clients,
                                   tell_client(Sys, Type, Msg, NEnt, Offset, Window, Deadline)
                           end || I <- lists:seq(0, Clients - 1)], Nodes),
    {Counts, Ends} = lists:unzip(Results),
    Total = lists:sum(Counts),
    {Total / (bench_figures:us(lists:max(Ends) - Start) / 1.0e6), Total}.

tell_client(Sys, Type, Msg, NEnt, Offset, Window, Deadline) ->
    [tell(Sys, Type, (Offset + K) rem NEnt + 1, Msg) || K <- lists:seq(0, Window - 1)],
    tell_loop(Sys, Type, Msg, NEnt, Offset + Window, Window, Deadline, 0).

tell_loop(_Sys, _Type, _Msg, _NEnt, _K, 0, _Deadline, Got) ->
    {Got, erlang:monotonic_time()};
tell_loop(Sys, Type, Msg, NEnt, K, Out, Deadline, Got) ->
    receive
        {Type, _Id, Reply} ->
            check_reply(Type, Reply),
            case erlang:monotonic_time() < Deadline of
                true ->
                    tell(Sys, Type, K rem NEnt + 1, Msg),
                    tell_loop(Sys, Type, Msg, NEnt, K + 1, Out, Deadline, Got + 1);
                false ->
                    tell_loop(Sys, Type, Msg, NEnt, K, Out - 1, Deadline, Got + 1)
            end
    after ?CALL_TIMEOUT ->
            erlang:error({tell_replies_missing, Out})
    end.

%%====================================================================
%% Asks
%%====================================================================

%% Clients call Msg on the hot entities, one call at a time each, for Secs
%% seconds. Returns calls per second, the p50 and p99 latency in
%% microseconds over every call of every client, and the number of calls.
ask(Sys, Type, Msg, NEnt, Clients, Secs) ->
    ask(Sys, Type, Msg, NEnt, Clients, Secs, [node()]).

%% The same with the clients spread over Nodes.
ask(Sys, Type, Msg, NEnt, Clients, Secs, Nodes) ->
    Start = erlang:monotonic_time(),
    Deadline = Start + erlang:convert_time_unit(Secs, second, native),
    Results = run_clients([fun() ->
                                   Offset = I * NEnt div Clients,
                                   ask_loop(Sys, Type, Msg, NEnt, Offset, Deadline, [])
                           end || I <- lists:seq(0, Clients - 1)], Nodes),
    Elapsed = bench_figures:us(erlang:monotonic_time() - Start) / 1.0e6,
    Lat = lists:sort(lists:append(Results)),
    {length(Lat) / Elapsed, bench_figures:percentile(Lat, 0.50),
     bench_figures:percentile(Lat, 0.99), length(Lat)}.

ask_loop(Sys, Type, Msg, NEnt, K, Deadline, Acc) ->
    T0 = erlang:monotonic_time(),
    case T0 < Deadline of
        true ->
            Reply = ask_one(Sys, Type, K rem NEnt + 1, Msg),
            T1 = erlang:monotonic_time(),
            check_ask(Type, Msg, Reply),
            ask_loop(Sys, Type, Msg, NEnt, K + 1, Deadline, [bench_figures:us(T1 - T0) | Acc]);
        false ->
            Acc
    end.

check_ask(counter, _, N) when is_integer(N) -> ok;
check_ask(ecounter, _, N) when is_integer(N) -> ok;
check_ask(echo, Msg, Msg) -> ok;
check_ask(_Type, _Msg, Other) -> erlang:error({bad_reply, Other}).

%%====================================================================
%% Client processes
%%====================================================================

%% Runs each fun in its own process, all released at once; returns their
%% results in order. A client that crashes fails the figure.
run_clients(Funs) ->
    run_clients(Funs, [node()]).

%% The same with the processes spread over Nodes, fun I (from 0) on node
%% I rem length(Nodes). A client on a node that goes away fails the figure
%% as a crash does (its monitor says noconnection).
run_clients(Funs, Nodes) ->
    Self = self(),
    Go = make_ref(),
    N = length(Nodes),
    Clients = [spawn_monitor(lists:nth(I rem N + 1, Nodes),
                             fun() ->
                                     receive Go -> ok end,
                                     Self ! {self(), Go, F()}
                             end) || {I, F} <- lists:zip(lists:seq(0, length(Funs) - 1), Funs)],
    [Pid ! Go || {Pid, _} <- Clients],
    [receive
         {Pid, Go, Result} ->
             erlang:demonitor(Ref, [flush]),
             Result;
         {'DOWN', Ref, process, Pid, Reason} ->
             [exit(P, kill) || {P, _} <- Clients],
             erlang:error({client_failed, Reason})
     end || {Pid, Ref} <- Clients].

%%====================================================================
%% The C load generator
%%====================================================================

%% Runs the C load generator once against the system's node and returns its
%% result line as a map of numbers. The BEAM baseline's region needs the
%% reply-to pid inside a tell.
c_loadgen(#{system := System, node := Node}, Mode, Window,
          #{c_loadgen := Exe, clients := C, seconds := Secs} = Cfg) ->
    filelib:is_regular(Exe) orelse erlang:error({c_loadgen_missing, Exe}),
    Args = ["--target", atom_to_list(Node), "--cookie", atom_to_list(erlang:get_cookie()),
            "--mode", atom_to_list(Mode), "--seconds", integer_to_list(Secs),
            "--clients", integer_to_list(C), "--window", integer_to_list(Window),
            "--entities", integer_to_list(?HOT_ENTITIES)]
        ++ case {System, Mode} of
               {beam, tell} -> ["--reply-to-in-msg"];
               _ -> []
           end
        ++ maps:get(c_loadgen_args, Cfg, []),
    %% its stderr is ours: its complaints reach the terminal as they are
    Port = open_port({spawn_executable, Exe}, [{args, Args}, {line, 4096}, exit_status, use_stdio]),
    {os_pid, OsPid} = erlang:port_info(Port, os_pid),
    bench_nodes:note_ospid(OsPid, Cfg),
    %% it gives up by itself 20 s (connecting) or 15 s (draining) late
    Lines = c_loadgen_output(Port, OsPid, [], (Secs + 60) * 1000),
    case [L || "mode=" ++ _ = L <- Lines] of
        [Line] -> parse_kv(Line);
        _ -> erlang:error({c_loadgen_output, Lines})
    end.

c_loadgen_output(Port, OsPid, Acc, Timeout) ->
    receive
        {Port, {data, {eol, Line}}} -> c_loadgen_output(Port, OsPid, [Line | Acc], Timeout);
        {Port, {data, {noeol, Line}}} -> c_loadgen_output(Port, OsPid, [Line | Acc], Timeout);
        {Port, {exit_status, 0}} -> lists:reverse(Acc);
        {Port, {exit_status, Status}} -> erlang:error({c_loadgen_failed, Status, lists:reverse(Acc)})
    after Timeout ->
            _ = os:cmd("kill -KILL " ++ integer_to_list(OsPid)),
            catch port_close(Port),
            erlang:error({c_loadgen_timeout, lists:reverse(Acc)})
    end.

%% "k1=v1 k2=v2 ..." with numeric values, as c_loadgen prints its result.
parse_kv(Line) ->
    maps:from_list([begin
                        [K, V] = string:split(Pair, "="),
                        {K, to_number(V)}
                    end || Pair <- string:lexemes(Line, " ")]).

to_number("ask") -> ask;
to_number("tell") -> tell;
to_number(V) ->
    case string:to_integer(V) of
        {N, ""} -> N;
        _ -> list_to_float(V)
    end.
