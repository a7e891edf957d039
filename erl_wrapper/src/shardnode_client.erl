%% @private
%% @doc A calling node's client of one shardnode node: what makes
%% {@link shardnode:call/5} and {@link shardnode:multi_call/4} cheap.
%%
%% A `gen_server:call' to a remote name costs the calling node three
%% distribution messages (monitor, request, demonitor) and a reply, and a
%% calling BEAM pays for each message it sends or receives far more than
%% for a local one. Callers on this node hand their calls to the node's
%% client instead (a local message). The client puts every call waiting
%% in its mailbox into one message per entity type,
%%
%%     {Type, Node} ! {'$shardnode_calls', Client, [{Tag, EntityId, Msg}]}
%%
%% with Tag `{'$shardnode_batched', Seq}', and the C node answers a turn's
%% replies to the client in one message, `{'$shardnode_replies', [{Tag,
%% Reply}]}' (docs/protocol.md "Batched calls"). The client hands each
%% reply to its caller's alias. A lone call goes out at once: nothing
%% waits for a batch to fill.
%%
%% Failing fast: the client monitors the node (monitor_node/2, no message
%% on the wire) and each type's region once (`erlang:monitor(process,
%% {Type, Node})'). When the connection goes, every caller waiting gets
%% `{error, noconnection}' and the client ends (the next call starts a new
%% one); when a region is not there, its callers get `{error, noproc}'.
%% A caller that gave up (its timeout) has deactivated its alias: a late
%% reply is dropped by the runtime, never left in its mailbox.
-module(shardnode_client).

-export([start/1, call/5, multi_call/4]).
-export([init/1]).

%% calls taken from the mailbox before the batch is sent
-define(MAX_DRAIN, 1000).
%% calls in one message at most: a multi_call of many goes in several, so
%% no message nears the node's max_message_bytes for ordinary requests and
%% the node answers the first ones while it reads the next
-define(MAX_BATCH, 1000).
%% how often calls whose caller has given up are forgotten
-define(SWEEP_MS, 1000).

-record(st, {node :: node(),
             seq = 0 :: non_neg_integer(),
             %% Seq => {Alias, Type, Deadline} | {multi, Alias, Index}
             pending = #{} :: #{non_neg_integer() => tuple()},
             %% Alias => {Type, Deadline, Left, Replies}
             multis = #{} :: #{reference() => tuple()},
             %% Type => monitor of {Type, Node}
             regions = #{} :: #{atom() => reference()},
             %% Type => requests to send, newest first
             out = #{} :: #{atom() => [tuple()]}}).

-spec start(node()) -> {pid(), reference()}.
start(Node) ->
    spawn_opt(?MODULE, init, [Node], [monitor, {message_queue_data, off_heap}]).

%% @doc One call through `Client' (see shardnode:call/5).
-spec call(pid(), atom(), term(), term(), timeout()) -> term().
call(Client, Type, Id, Msg, Timeout) ->
    Alias = erlang:monitor(process, Client, [{alias, reply_demonitor}]),
    Client ! {'$call', Alias, Type, Id, Msg, deadline(Timeout)},
    receive
        {Alias, Reply} -> Reply;
        {'DOWN', Alias, process, _, Reason} -> {error, down_reason(Reason)}
    after Timeout ->
            given_up(Alias)
    end.

%% @doc Many calls to one type through `Client', in one message; the
%% replies in the order of the requests (see shardnode:multi_call/4).
-spec multi_call(pid(), atom(), [{term(), term()}], timeout()) -> [term()] | {error, term()}.
multi_call(_Client, _Type, [], _Timeout) ->
    [];
multi_call(Client, Type, Requests, Timeout) ->
    Alias = erlang:monitor(process, Client, [{alias, reply_demonitor}]),
    Client ! {'$multi_call', Alias, Type, Requests, deadline(Timeout)},
    receive
        {Alias, Replies} -> Replies;
        {'DOWN', Alias, process, _, Reason} -> {error, down_reason(Reason)}
    after Timeout ->
            given_up(Alias)
    end.

%% The alias is deactivated first: a reply sent after this is dropped by
%% the runtime. One sent before it may be in the mailbox already: it is
%% the answer, late as it is.
given_up(Alias) ->
    erlang:demonitor(Alias, [flush]),
    receive
        {Alias, Reply} -> Reply
    after 0 ->
            {error, timeout}
    end.

%% The client ends with `normal' once its node is gone (after answering
%% every waiting caller); before it ever ran, a monitor says `noproc'.
down_reason(normal) -> noconnection;
down_reason(noproc) -> noconnection;
down_reason(noconnection) -> noconnection;
down_reason(Other) -> {client_crashed, Other}.

deadline(infinity) -> infinity;
deadline(Timeout) -> erlang:monotonic_time(millisecond) + Timeout.

%%--------------------------------------------------------------------
%% The client process
%%--------------------------------------------------------------------

-spec init(node()) -> no_return().
init(Node) ->
    %% Connects if need be; a node that cannot be reached is reported as
    %% {nodedown, Node} at once, and the callers learn of it.
    true = erlang:monitor_node(Node, true),
    erlang:send_after(?SWEEP_MS, self(), sweep),
    loop(#st{node = Node}).

loop(S) ->
    receive
        M -> drain(handle(M, S), 1)
    end.

%% Everything already in the mailbox is taken before the batches leave:
%% calls that arrived together go together.
drain(S, N) when N < ?MAX_DRAIN ->
    receive
        M -> drain(handle(M, S), N + 1)
    after 0 ->
            loop(send_out(S))
    end;
drain(S, _) ->
    loop(send_out(S)).

handle({'$call', Alias, Type, Id, Msg, Deadline}, #st{seq = Seq, pending = P} = S0) ->
    S = watch(Type, S0),
    S#st{seq = Seq + 1,
         pending = P#{Seq => {Alias, Type, Deadline}},
         out = add_out(Type, [{{'$shardnode_batched', Seq}, Id, Msg}], S#st.out)};
handle({'$multi_call', Alias, Type, Requests, Deadline}, #st{seq = Seq0, pending = P0, multis = Ms} = S0) ->
    S = watch(Type, S0),
    {Seq, P, Reqs} = number(Requests, Alias, 1, Seq0, P0, []),
    Count = Seq - Seq0,
    S#st{seq = Seq, pending = P,
         multis = Ms#{Alias => {Type, Deadline, Count, #{}}},
         out = add_out(Type, Reqs, S#st.out)};
handle({'$shardnode_replies', Replies}, S) ->
    lists:foldl(fun answered/2, S, Replies);
handle({{'$shardnode_batched', _}, _} = Reply, S) ->
    %% a reply the C node sent alone
    answered(Reply, S);
handle({'DOWN', MRef, process, {Type, _}, Reason}, #st{regions = Rs} = S) ->
    case Rs of
        #{Type := MRef} when Reason =:= noconnection ->
            S; % {nodedown, Node} follows
        #{Type := MRef} ->
            fail_type(Type, noproc, S#st{regions = maps:remove(Type, Rs)});
        #{} ->
            S
    end;
handle({nodedown, _Node}, S) ->
    _ = fail_all(noconnection, S),
    exit(normal);
handle(sweep, S) ->
    erlang:send_after(?SWEEP_MS, self(), sweep),
    sweep(erlang:monotonic_time(millisecond), S);
handle(_Other, S) ->
    S.

number([{Id, Msg} | Rest], Alias, Index, Seq, P, Acc) ->
    number(Rest, Alias, Index + 1, Seq + 1, P#{Seq => {multi, Alias, Index}},
           [{{'$shardnode_batched', Seq}, Id, Msg} | Acc]);
number([], _Alias, _Index, Seq, P, Acc) ->
    {Seq, P, Acc}.

%% Requests are kept newest first; Reqs (newest first too) go on top.
add_out(Type, Reqs, Out) ->
    case Out of
        #{Type := Old} -> Out#{Type := Reqs ++ Old};
        #{} -> Out#{Type => Reqs}
    end.

%% A type's region is watched from its first call on: its absence is
%% known at once, not at each caller's timeout.
watch(Type, #st{regions = Rs, node = Node} = S) ->
    case Rs of
        #{Type := _} -> S;
        #{} -> S#st{regions = Rs#{Type => erlang:monitor(process, {Type, Node})}}
    end.

send_out(#st{out = Out} = S) when map_size(Out) =:= 0 ->
    S;
send_out(#st{out = Out, node = Node} = S) ->
    maps:foreach(fun(Type, Reqs) -> send_batches(Type, Node, lists:reverse(Reqs)) end, Out),
    S#st{out = #{}}.

send_batches(_Type, _Node, []) ->
    ok;
send_batches(Type, Node, Reqs) ->
    {Batch, Rest} = take(?MAX_BATCH, Reqs, []),
    {Type, Node} ! {'$shardnode_calls', self(), Batch},
    send_batches(Type, Node, Rest).

%% The first N of a list (or all of a shorter one) and the rest.
take(0, Rest, Acc) -> {lists:reverse(Acc), Rest};
take(_, [], Acc) -> {lists:reverse(Acc), []};
take(N, [R | Rest], Acc) -> take(N - 1, Rest, [R | Acc]).

answered({{'$shardnode_batched', Seq}, Reply}, #st{pending = P} = S) ->
    case maps:take(Seq, P) of
        {{multi, Alias, Index}, Rest} ->
            multi_answered(Alias, Index, Reply, S#st{pending = Rest});
        {{Alias, _Type, _Deadline}, Rest} ->
            Alias ! {Alias, Reply},
            S#st{pending = Rest};
        error ->
            S
    end;
answered(_Other, S) ->
    S.

multi_answered(Alias, Index, Reply, #st{multis = Ms} = S) ->
    case Ms of
        #{Alias := {_Type, _Deadline, 1, Replies}} ->
            All = Replies#{Index => Reply},
            Alias ! {Alias, [maps:get(I, All) || I <- lists:seq(1, map_size(All))]},
            S#st{multis = maps:remove(Alias, Ms)};
        #{Alias := {Type, Deadline, Left, Replies}} ->
            S#st{multis = Ms#{Alias := {Type, Deadline, Left - 1, Replies#{Index => Reply}}}};
        #{} ->
            S
    end.

%% Every caller waiting on `Type' gets {error, Why}.
fail_type(Type, Why, #st{pending = P, multis = Ms} = S) ->
    {Failed, Kept} = maps:fold(fun(Seq, {multi, Alias, _} = V, {F, K}) ->
                                       case Ms of
                                           #{Alias := {Type, _, _, _}} -> {F, K};
                                           #{} -> {F, K#{Seq => V}}
                                       end;
                                  (Seq, {Alias, T, _} = V, {F, K}) ->
                                       case T of
                                           Type -> {[Alias | F], K};
                                           _ -> {F, K#{Seq => V}}
                                       end
                               end, {[], #{}}, P),
    FailedMultis = [A || {A, {T, _, _, _}} <- maps:to_list(Ms), T =:= Type],
    [A ! {A, {error, Why}} || A <- Failed ++ FailedMultis],
    S#st{pending = Kept, multis = maps:without(FailedMultis, Ms)}.

fail_all(Why, #st{pending = P, multis = Ms}) ->
    [A ! {A, {error, Why}} || {A, _, _} <- maps:values(P), is_reference(A)],
    [A ! {A, {error, Why}} || A <- maps:keys(Ms)],
    ok.

%% Calls past their deadline are forgotten: their callers have given up
%% and deactivated their aliases, so nothing is sent to them.
sweep(Now, #st{pending = P, multis = Ms} = S) ->
    Live = fun(infinity) -> true; (D) -> D >= Now end,
    LiveMs = maps:filter(fun(_, {_, D, _, _}) -> Live(D) end, Ms),
    LiveP = maps:filter(fun(_, {multi, A, _}) -> is_map_key(A, LiveMs);
                           (_, {_, _, D}) -> Live(D)
                        end, P),
    S#st{pending = LiveP, multis = LiveMs}.
