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
%% Failing fast: the client connects to the node first, then monitors it
%% (monitor_node/2, no message on the wire) and each type's region once
%% (`erlang:monitor(process, {Type, Node})'). When the connection goes,
%% every caller waiting gets `{error, noconnection}' and the client ends
%% (the next call starts a new one); when a region is not there, its
%% callers get `{error, noproc}'.
%%
%% Sent or not: a request goes only over a connection that is up
%% (`erlang:send/3' with `noconnect'), so a request that never left this
%% node is known. Its caller is answered `{'$shardnode_unsent',
%% noconnection}' (call/5 makes it `{error, noconnection}'; attempt/5, for
%% shardnode_retry, keeps it): certainly not handled, so safe to send
%% again. A caller whose request the client never took (it ended first, or
%% could not connect) learns the same from the client's `normal' exit.
%% A caller that gave up (its timeout) has deactivated its alias: a late
%% reply is dropped by the runtime, never left in its mailbox.
%%
%% Big requests: one of ?ALONE_BYTES or more goes alone, as a
%% '$gen_call' of its own (tagged as a batched one, so its reply comes
%% back the same way): in a batch it would hold its neighbours up, and a
%% batch over the node's max_message_bytes would be discarded whole. One
%% that the node could not take (its max_message_bytes, asked of its
%% admin once) is answered {error, message_too_large} at once, never sent.
%% A multi_call element that is no {EntityId, Msg} is answered {error,
%% {bad_request, Element}} in its place, as the node answers one.
-module(shardnode_client).

-export([start/1, call/5, attempt/5, multi_call/4]).
-export([init/1]).

%% calls taken from the mailbox before the batch is sent
-define(MAX_DRAIN, 1000).
%% calls in one message at most: a multi_call of many goes in several, so
%% no message nears the node's max_message_bytes for ordinary requests and
%% the node answers the first ones while it reads the next
-define(MAX_BATCH, 1000).
%% how often calls whose caller has given up are forgotten
-define(SWEEP_MS, 1000).
%% a request this big (its external size) or bigger goes alone
-define(ALONE_BYTES, 1048576).
%% what a '$gen_call' adds around the request: control message, From, tags
-define(ENVELOPE_BYTES, 1024).
%% max_message_bytes of a node that does not say (docs/contract.md)
-define(DEFAULT_MAX_MESSAGE_BYTES, 67108864).

-record(st, {node :: node(),
             seq = 0 :: non_neg_integer(),
             %% Seq => {Alias, Type, Deadline} | {multi, Alias, Index}
             pending = #{} :: #{non_neg_integer() => tuple()},
             %% Alias => {Type, Deadline, Left, Replies}
             multis = #{} :: #{reference() => tuple()},
             %% Type => monitor of {Type, Node}
             regions = #{} :: #{atom() => reference()},
             %% Type => requests to send, newest first
             out = #{} :: #{atom() => [tuple()]},
             %% the node's max_message_bytes, once a big request asked
             max_bytes :: undefined | pos_integer()}).

-spec start(node()) -> {pid(), reference()}.
start(Node) ->
    spawn_opt(?MODULE, init, [Node], [monitor, {message_queue_data, off_heap}]).

%% @doc One call through `Client' (see shardnode:call/5).
-spec call(pid(), atom(), term(), term(), timeout()) -> term().
call(Client, Type, Id, Msg, Timeout) ->
    case attempt(Client, Type, Id, Msg, Timeout) of
        {unsent, Why} -> {error, Why};
        Reply -> Reply
    end.

%% @doc One call through `Client', telling a request that certainly never
%% left this node (`{unsent, noconnection}') from any other outcome (the
%% reply, or `{error, _}' as call/5 returns it).
-spec attempt(pid(), atom(), term(), term(), timeout()) -> term() | {unsent, noconnection}.
attempt(Client, Type, Id, Msg, Timeout) ->
    Alias = erlang:monitor(process, Client, [{alias, reply_demonitor}]),
    Client ! {'$call', Alias, Type, Id, Msg, erlang:external_size({Id, Msg}), deadline(Timeout)},
    receive
        {Alias, {'$shardnode_unsent', Why}} -> {unsent, Why};
        {Alias, Reply} -> Reply;
        {'DOWN', Alias, process, _, Reason} -> down_outcome(Reason)
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
    %% Sized here, in the caller, not in the client all callers share.
    Sized = [case R of
                 {Id, Msg} -> {Id, Msg, erlang:external_size(R)};
                 _ -> {bad_request, R}
             end || R <- Requests],
    Client ! {'$multi_call', Alias, Type, Sized, deadline(Timeout)},
    receive
        {Alias, {'$shardnode_unsent', Why}} -> {error, Why};
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
        {Alias, {'$shardnode_unsent', Why}} -> {unsent, Why};
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

%% The client ended without answering: `normal' and `noproc' mean it never
%% took the request (it answers every one it took before it ends).
down_outcome(Reason) when Reason =:= normal; Reason =:= noproc -> {unsent, noconnection};
down_outcome(Reason) -> {error, down_reason(Reason)}.

deadline(infinity) -> infinity;
deadline(Timeout) -> erlang:monotonic_time(millisecond) + Timeout.

%%--------------------------------------------------------------------
%% The client process
%%--------------------------------------------------------------------

-spec init(node()) -> no_return().
init(Node) ->
    %% Connected first, so that requests go only over a connection that is
    %% up: a node that cannot be reached ends the client at once, and the
    %% callers whose requests wait in its mailbox learn that none was sent.
    case net_kernel:connect_node(Node) of
        true -> ok;
        _ -> exit(normal)
    end,
    %% A connection lost from here on is reported as {nodedown, Node}.
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

handle({'$call', Alias, Type, Id, Msg, Size, Deadline}, #st{seq = Seq, pending = P} = S0) ->
    case route(Size, S0) of
        {too_large, S} ->
            Alias ! {Alias, {error, message_too_large}},
            S;
        {How, S1} ->
            S = watch(Type, S1),
            S2 = S#st{seq = Seq + 1, pending = P#{Seq => {Alias, Type, Deadline}}},
            send(How, Type, {{'$shardnode_batched', Seq}, Id, Msg}, S2)
    end;
handle({'$multi_call', Alias, Type, Sized, Deadline}, #st{multis = Ms} = S0) ->
    S = watch(Type, S0),
    {Count, Answered, S1} = number(Sized, Alias, Type, 1, 0, #{}, S),
    case Count of
        0 ->
            Alias ! {Alias, [maps:get(I, Answered) || I <- lists:seq(1, map_size(Answered))]},
            S1;
        _ ->
            S1#st{multis = Ms#{Alias => {Type, Deadline, Count, Answered}}}
    end;
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
handle({unsent, Seqs}, S) ->
    unsent(Seqs, S);
handle(sweep, S) ->
    erlang:send_after(?SWEEP_MS, self(), sweep),
    sweep(erlang:monotonic_time(millisecond), S);
handle(_Other, S) ->
    S.

%% Each request of a multi_call numbered and sent (batched or alone), or
%% answered in its place: {Sent, Answered, S}.
number([{bad_request, R} | Rest], Alias, Type, Index, Sent, Answered, S) ->
    number(Rest, Alias, Type, Index + 1, Sent, Answered#{Index => {error, {bad_request, R}}}, S);
number([{Id, Msg, Size} | Rest], Alias, Type, Index, Sent, Answered, #st{seq = Seq, pending = P} = S0) ->
    case route(Size, S0) of
        {too_large, S} ->
            number(Rest, Alias, Type, Index + 1, Sent, Answered#{Index => {error, message_too_large}}, S);
        {How, S1} ->
            S2 = S1#st{seq = Seq + 1, pending = P#{Seq => {multi, Alias, Index}}},
            S = send(How, Type, {{'$shardnode_batched', Seq}, Id, Msg}, S2),
            number(Rest, Alias, Type, Index + 1, Sent + 1, Answered, S)
    end;
number([], _Alias, _Type, _Index, Sent, Answered, S) ->
    {Sent, Answered, S}.

%% How a request of Size bytes goes: in a batch, alone, or not at all.
route(Size, S) when Size < ?ALONE_BYTES ->
    {batch, S};
route(Size, S0) ->
    {Max, S} = max_bytes(S0),
    case Size + ?ENVELOPE_BYTES > Max of
        true -> {too_large, S};
        false -> {alone, S}
    end.

max_bytes(#st{max_bytes = undefined, node = Node} = S) ->
    %% sys:get_state/2 by hand: its spec names no {Name, Node}.
    Max = try gen:call({shardnode, Node}, system, get_state, 5000) of
              {ok, #{max_message_bytes := M}} when is_integer(M), M > 0 -> M;
              _ -> ?DEFAULT_MAX_MESSAGE_BYTES
          catch
              _:_ -> ?DEFAULT_MAX_MESSAGE_BYTES
          end,
    {Max, S#st{max_bytes = Max}};
max_bytes(#st{max_bytes = Max} = S) ->
    {Max, S}.

send(batch, Type, Req, #st{out = Out} = S) ->
    S#st{out = add_out(Type, [Req], Out)};
send(alone, Type, {Tag, Id, Msg}, #st{node = Node, out = Out} = S) ->
    %% What waits for this type's batch goes first: calls to one entity
    %% stay in the order made.
    Rest = case maps:take(Type, Out) of
               {Reqs, Others} -> send_batches(Type, Node, lists:reverse(Reqs)), Others;
               error -> Out
           end,
    {_, Seq} = Tag,
    send_connected({Type, Node}, {'$gen_call', {self(), Tag}, {Id, Msg}}, [Seq]),
    S#st{out = Rest}.

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
    send_connected({Type, Node}, {'$shardnode_calls', self(), Batch}, [Seq || {{_, Seq}, _, _} <- Batch]),
    send_batches(Type, Node, Rest).

%% Sends only over a connection that is up (`noconnect'). With none,
%% nothing was sent: the requests Seqs come back to the client as
%% {unsent, Seqs}, after what it has in hand, and their callers are
%% answered that nothing was sent (the nodedown follows).
send_connected(Dest, Msg, Seqs) ->
    case erlang:send(Dest, Msg, [noconnect]) of
        ok -> ok;
        noconnect -> self() ! {unsent, Seqs}, ok
    end.

%% Requests that never left: their callers are told so, and forgotten.
unsent(Seqs, S) ->
    lists:foldl(fun(Seq, Acc) ->
                        answered({{'$shardnode_batched', Seq}, {'$shardnode_unsent', noconnection}}, Acc)
                end, S, Seqs).

%% The first N of a list (or all of a shorter one) and the rest.
take(0, Rest, Acc) -> {lists:reverse(Acc), Rest};
take(_, [], Acc) -> {lists:reverse(Acc), []};
take(N, [R | Rest], Acc) -> take(N - 1, Rest, [R | Acc]).

answered({{'$shardnode_batched', Seq}, Reply}, #st{pending = P} = S) ->
    case maps:take(Seq, P) of
        {{multi, Alias, Index}, Rest} ->
            multi_answered(Alias, Index, unsent_as_error(Reply), S#st{pending = Rest});
        {{Alias, _Type, _Deadline}, Rest} ->
            Alias ! {Alias, Reply},
            S#st{pending = Rest};
        error ->
            S
    end;
answered(_Other, S) ->
    S.

%% In a multi_call's list, a request not sent is an error like any other.
unsent_as_error({'$shardnode_unsent', Why}) -> {error, Why};
unsent_as_error(Reply) -> Reply.

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

%% The connection is gone: a request still waiting to be sent (`out', or
%% reported unsent) certainly was not; the others may have been handled.
fail_all(Why, #st{out = Out} = S0) ->
    Unsent = [Seq || Reqs <- maps:values(Out), {{_, Seq}, _, _} <- Reqs] ++ unsent_reported([]),
    #st{pending = P, multis = Ms} = unsent(Unsent, S0#st{out = #{}}),
    [A ! {A, {error, Why}} || {A, _, _} <- maps:values(P), is_reference(A)],
    [A ! {A, {error, Why}} || A <- maps:keys(Ms)],
    ok.

unsent_reported(Acc) ->
    receive
        {unsent, Seqs} -> unsent_reported(Seqs ++ Acc)
    after 0 ->
            Acc
    end.

%% Calls past their deadline are forgotten: their callers have given up
%% and deactivated their aliases, so nothing is sent to them.
sweep(Now, #st{pending = P, multis = Ms} = S) ->
    Live = fun(infinity) -> true; (D) -> D >= Now end,
    LiveMs = maps:filter(fun(_, {_, D, _, _}) -> Live(D) end, Ms),
    LiveP = maps:filter(fun(_, {multi, A, _}) -> is_map_key(A, LiveMs);
                           (_, {_, _, D}) -> Live(D)
                        end, P),
    S#st{pending = LiveP, multis = LiveMs}.
