%% @private
%% @doc The collector behind {@link shardnode_ct:track_instances/1} and
%% {@link shardnode_ct:assert_no_duplicate_instances/1}: a process
%% registered as `shardnode_instances' that the C nodes started with the
%% test setting `instance_reports_to' (this node) tell of every entity
%% incarnation, as it begins and as it ends (docs/contract.md "Counting
%% instances"):
%%
%%     {shardnode_instance, Node, Type, EntityId, started | stopped, TimeUs}
%%
%% TimeUs is the member's wall clock in microseconds. An incarnation is
%% the interval from its start to its stop; one whose member is lost (a
%% kill -9 sends no stops) ends when this node sees the member's
%% connection go, on this node's clock (os:system_time/1). Two
%% incarnations of one entity on two members whose intervals overlap are
%% a duplicate. The clocks are one clock for members on this machine, as
%% in a test; elsewhere the check is as good as their agreement.
-module(shardnode_instances).

-export([start/1, stop/0, reports_to/0, incarnations/0]).
-export([init/1]).

-define(NAME, shardnode_instances).

%% {Node, Type, Id, StartUs, StopUs | running}
-type incarnation() :: {node(), atom(), term(), integer(), integer() | running}.
-export_type([incarnation/0]).

%% @doc Starts collecting reports of `Types' (any other type's are
%% ignored), forgetting what was collected before. The collector is
%% linked to nothing: it outlives the process that started it (a
%% common_test init function's) until stop/0.
-spec start([atom()]) -> ok.
start(Types) when is_list(Types) ->
    case whereis(?NAME) of
        undefined ->
            Pid = spawn(?MODULE, init, [self()]),
            receive {Pid, ready} -> ok end;
        _ ->
            ok
    end,
    call({reset, Types}).

%% @doc Stops the collector, if it runs.
-spec stop() -> ok.
stop() ->
    case whereis(?NAME) of
        undefined ->
            ok;
        Pid ->
            Ref = monitor(process, Pid),
            exit(Pid, kill),
            receive {'DOWN', Ref, process, Pid, _} -> ok end
    end.

%% @doc The node the C nodes report to while a collector runs, else
%% `undefined'.
-spec reports_to() -> node() | undefined.
reports_to() ->
    case whereis(?NAME) of
        undefined -> undefined;
        _ -> node()
    end.

%% @doc Every incarnation reported since start/1, oldest first.
-spec incarnations() -> [incarnation()].
incarnations() ->
    call(incarnations).

call(Request) ->
    Ref = monitor(process, ?NAME),
    ?NAME ! {Request, self(), Ref},
    receive
        {Ref, Reply} -> demonitor(Ref, [flush]), Reply;
        {'DOWN', Ref, process, _, Reason} -> error({instance_collector_down, Reason})
    end.

%%--------------------------------------------------------------------
%% The collector
%%--------------------------------------------------------------------

-record(st, {types = [] :: [atom()],
             %% {Node, Type, Id} => StartUs
             running = #{} :: #{{node(), atom(), term()} => integer()},
             ended = [] :: [incarnation()],    % newest first
             watched = #{} :: #{node() => true}}).

-spec init(pid()) -> no_return().
init(Parent) ->
    true = register(?NAME, self()),
    Parent ! {self(), ready},
    loop(#st{}).

loop(S) ->
    receive
        {shardnode_instance, Node, Type, Id, Event, TimeUs} when is_integer(TimeUs) ->
            loop(report(Node, Type, Id, Event, TimeUs, S));
        {nodedown, Node} ->
            loop(lost(Node, os:system_time(microsecond), S));
        {{reset, Types}, From, Ref} ->
            From ! {Ref, ok},
            loop(#st{types = Types, watched = S#st.watched});
        {incarnations, From, Ref} ->
            Running = [{N, T, I, Start, running} || {{N, T, I}, Start} <- maps:to_list(S#st.running)],
            From ! {Ref, lists:keysort(4, lists:reverse(S#st.ended) ++ Running)},
            loop(S);
        _Other ->
            loop(S)
    end.

report(Node, Type, Id, Event, TimeUs, #st{types = Types} = S0) ->
    case lists:member(Type, Types) of
        false ->
            S0;
        true ->
            S = watch(Node, S0),
            Key = {Node, Type, Id},
            case Event of
                started ->
                    S#st{running = (S#st.running)#{Key => TimeUs}};
                stopped ->
                    case maps:take(Key, S#st.running) of
                        {Start, Running} ->
                            S#st{running = Running, ended = [{Node, Type, Id, Start, TimeUs} | S#st.ended]};
                        error ->
                            S % its start came before the reset
                    end
            end
    end.

%% A member seen for the first time is monitored: its connection's end
%% ends its incarnations (a killed member sends no stops).
watch(Node, #st{watched = W} = S) ->
    case W of
        #{Node := _} ->
            S;
        #{} ->
            true = erlang:monitor_node(Node, true),
            S#st{watched = W#{Node => true}}
    end.

lost(Node, NowUs, #st{running = Running, ended = Ended, watched = W} = S) ->
    {Gone, Left} = maps:fold(fun({N, _, _} = K, Start, {G, L}) when N =:= Node -> {[{K, Start} | G], L};
                                (K, Start, {G, L}) -> {G, L#{K => Start}}
                             end, {[], #{}}, Running),
    S#st{running = Left,
         ended = [{N, T, I, Start, NowUs} || {{N, T, I}, Start} <- Gone] ++ Ended,
         watched = maps:remove(Node, W)}.
