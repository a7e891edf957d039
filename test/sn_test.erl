%% Helpers every common_test suite of this repository shares: waiting for a
%% condition with a deadline, calling a counter, and a client that
%% increments counters and checks, on every answer, that acknowledged
%% values only go up; and the recorder of sn_tally's processes, which tells
%% whether an entity ever ran twice at once.
%%
%% A suite imports what it uses:
%%
%%   -import(sn_test, [await/1, call/3]).
%%
%% (shardnode_ct, in the wrapper, holds the helpers a user's suites need
%% too: starting and stopping nodes and peers, metrics pages.)
-module(sn_test).

-include_lib("common_test/include/ct.hrl").

-export([await/1, await/2, call/3, call/4, same_up_members/1, stop_supervisor/1,
         start_incrementer/3, start_incrementer/4, acked/1, stop_incrementer/1,
         start_instance_recorder/0, second_instances/1, running_instances/1,
         http_get/2, pg_server_script/0, sh/1]).

-define(AWAIT_MS, 15000).
-define(CALL_MS, 10000).

%% Polls Fun (a fun() -> boolean()) until it returns true; fails the test
%% when it has not within 15 s.
-spec await(fun(() -> boolean())) -> ok.
await(Fun) -> await(Fun, ?AWAIT_MS).

%% The same within TimeoutMs.
-spec await(fun(() -> boolean()), non_neg_integer()) -> ok.
await(Fun, TimeoutMs) ->
    case shardnode_poll:until(Fun, TimeoutMs) of
        ok -> ok;
        timeout -> ct:fail({condition_not_reached, TimeoutMs})
    end.

%% gen_server:call to the counter entity Id on Node, within 10 s.
-spec call(node(), term(), term()) -> term().
call(Node, Id, Msg) -> call(Node, counter, Id, Msg).

%% gen_server:call to the entity Id of Type on Node, within 10 s.
-spec call(node(), atom(), term(), term()) -> term().
call(Node, Type, Id, Msg) ->
    gen_server:call({Type, Node}, {Id, Msg}, ?CALL_MS).

%% Starts a client (linked to the caller) that increments the counters
%% Ids on Node round robin, one call out at a time, keeping each counter's
%% last acknowledged value. Every acknowledged value must be greater than
%% the one before it: a value that goes back is recorded, and
%% stop_incrementer/1 fails the test with it. A call that fails
%% ({error, _} as a reply, or an exit) acknowledges nothing; OnFailure says
%% what comes next: `continue' (the node is expected back, or the failure
%% to pass) or `stop' (the node is gone: increment no more).
-spec start_incrementer(node(), [term()], continue | stop) -> pid().
start_incrementer(Node, Ids, OnFailure) ->
    start_incrementer(Node, counter, Ids, OnFailure).

%% The same for the entities of Type, which answer `incr' with their new
%% value as the counter does. Given a list of nodes, the client calls them
%% in turn, one call each, so a member that is down (a rolling restart)
%% costs a failed call now and then while the others answer.
-spec start_incrementer(node() | [node()], atom(), [term()], continue | stop) -> pid().
start_incrementer(Nodes, Type, Ids, OnFailure) when is_list(Nodes), Nodes =/= [],
                                                    (OnFailure =:= continue orelse OnFailure =:= stop) ->
    spawn_link(fun() -> incrementer([{Type, N} || N <- Nodes], Ids, OnFailure, #{}, []) end);
start_incrementer(Node, Type, Ids, OnFailure) when OnFailure =:= continue; OnFailure =:= stop ->
    spawn_link(fun() -> incrementer([{Type, Node}], Ids, OnFailure, #{}, []) end).

%% The increments a client has had acknowledged so far; fails the test if
%% it does not answer within 15 s.
-spec acked(pid()) -> non_neg_integer().
acked(Client) ->
    Client ! {acked, self()},
    receive {acked, Client, K} -> K
    after ?AWAIT_MS -> ct:fail({client_silent, Client})
    end.

%% Stops a client and returns its last acknowledged value per counter;
%% fails the test if a value ever went back, or if it does not answer.
-spec stop_incrementer(pid()) -> #{term() => integer()}.
stop_incrementer(Client) ->
    Client ! {stop, self()},
    receive
        {final, Client, Acks, []} -> Acks;
        {final, Client, _, Back} -> ct:fail({acknowledged_values_went_back, lists:reverse(Back)})
    after ?AWAIT_MS -> ct:fail({client_did_not_finish, Client})
    end.

incrementer(Regions, Ids, OnFailure, Acks, Back) ->
    receive
        {acked, From} ->
            From ! {acked, self(), lists:sum(maps:values(Acks))},
            incrementer(Regions, Ids, OnFailure, Acks, Back);
        {stop, From} ->
            From ! {final, self(), Acks, Back}
    after 0 ->
        [Id | Rest] = Ids,
        [Region | Others] = Regions,
        Next = Others ++ [Region],
        case catch gen_server:call(Region, {Id, incr}, ?CALL_MS) of
            V when is_integer(V) ->
                Prev = maps:get(Id, Acks, 0),
                Back1 = case V > Prev of
                            true -> Back;
                            false -> [{Id, Prev, V} | Back]
                        end,
                incrementer(Next, Rest ++ [Id], OnFailure, Acks#{Id => max(V, Prev)}, Back1);
            _ when OnFailure =:= continue ->
                incrementer(Next, Rest ++ [Id], OnFailure, Acks, Back);
            _ ->
                stopped(Acks, Back)
        end
    end.

%% A client that stopped incrementing still answers.
stopped(Acks, Back) ->
    receive
        {acked, From} -> From ! {acked, self(), lists:sum(maps:values(Acks))}, stopped(Acks, Back);
        {stop, From} -> From ! {final, self(), Acks, Back}
    end.

%% Starts the instance recorder and registers it as sn_instances, where
%% every sn_tally process on this node reports its start and end (the
%% caller kills it at the end of the case). A start while another process
%% of the same id still runs is a second instance.
-spec start_instance_recorder() -> pid().
start_instance_recorder() ->
    Recorder = spawn(fun() -> recorder(#{}, []) end),
    true = register(sn_instances, Recorder),
    Recorder.

%% The second instances seen so far: [{Id, Pid, OthersRunning}].
-spec second_instances(pid()) -> [{term(), pid(), [pid()]}].
second_instances(Recorder) ->
    Recorder ! {seconds, self()},
    receive {seconds, S} -> S after ?AWAIT_MS -> ct:fail(recorder_silent) end.

%% The ids whose sn_tally process runs now.
-spec running_instances(pid()) -> [term()].
running_instances(Recorder) ->
    Recorder ! {running, self()},
    receive {running, Ids} -> Ids after ?AWAIT_MS -> ct:fail(recorder_silent) end.

recorder(Live, Seconds) ->
    receive
        {sn_tally, {init, Id, Pid}} ->
            Others = [P || {P, I} <- maps:to_list(Live), I =:= Id, is_process_alive(P)],
            _ = erlang:monitor(process, Pid),
            recorder(Live#{Pid => Id}, [{Id, Pid, Others} || Others =/= []] ++ Seconds);
        {sn_tally, {terminate, Pid}} ->
            recorder(maps:remove(Pid, Live), Seconds);
        {'DOWN', _, process, Pid, _} ->
            recorder(maps:remove(Pid, Live), Seconds);
        {seconds, From} ->
            From ! {seconds, Seconds},
            recorder(Live, Seconds);
        {running, From} ->
            From ! {running, [Id || {P, Id} <- maps:to_list(Live), is_process_alive(P)]},
            recorder(Live, Seconds)
    end.

%% GET Path from 127.0.0.1:Port on a new connection (closed after):
%% {Status, Body}, or {error, Why} when nothing answers.
-spec http_get(inet:port_number(), string()) -> {integer(), binary()} | {error, term()}.
http_get(Port, Path) ->
    case gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}], 2000) of
        {ok, S} ->
            ok = gen_tcp:send(S, ["GET ", Path, " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"]),
            Answer = http_recv(S, <<>>),
            gen_tcp:close(S),
            case Answer of
                <<"HTTP/1.1 ", Code:3/binary, _/binary>> ->
                    [_, Body] = binary:split(Answer, <<"\r\n\r\n">>),
                    {binary_to_integer(Code), Body};
                _ -> {error, {bad_answer, Answer}}
            end;
        {error, Why} -> {error, Why}
    end.

http_recv(S, Acc) ->
    case gen_tcp:recv(S, 0, 5000) of
        {ok, Data} -> http_recv(S, <<Acc/binary, Data/binary>>);
        {error, _} -> Acc
    end.

%% Whether every node of Nodes lists the same members up, in the same order,
%% and those are exactly Nodes (shardnode_ct:members/1: a node that does not
%% answer within 2 s lists `error').
-spec same_up_members([node()]) -> boolean().
same_up_members(Nodes) ->
    Lists = [shardnode_ct:members(N) || N <- Nodes],
    length(lists:usort(Lists)) =:= 1 andalso lists:sort(hd(Lists)) =:= lists:sort(Nodes).

%% Stops a supervisor started with supervisor:start_link/2 as its own
%% supervisor would (exit shutdown), and returns once it has stopped: its
%% children, C nodes among them, are stopped first.
-spec stop_supervisor(pid()) -> ok.
stop_supervisor(Sup) ->
    Ref = monitor(process, Sup),
    unlink(Sup),
    exit(Sup, shutdown),
    receive {'DOWN', Ref, process, Sup, _} -> ok end.

%% scripts/pg-server.sh of the checkout (a private PostgreSQL server),
%% found as c_driver finds the project's root.
-spec pg_server_script() -> string().
pg_server_script() ->
    Script = filename:join("scripts", "pg-server.sh"),
    case c_driver:project_root([Script]) of
        {ok, Root} -> filename:join(Root, Script);
        {error, Tried} -> ct:fail({pg_server_script_not_found, Tried})
    end.

%% Runs a shell command: its exit status and its output (stderr with it).
-spec sh(iodata()) -> {integer(), string()}.
sh(Cmd) ->
    Out = os:cmd(lists:flatten(Cmd) ++ " 2>&1; echo \"rc=$?\""),
    [Rc | Rest] = lists:reverse(string:lexemes(Out, "\n")),
    {list_to_integer(string:prefix(Rc, "rc=")), string:join(lists:reverse(Rest), "\n")}.
