%% @private
%% @doc The host's side of one C node for entities written in Erlang or
%% Elixir ({@link shardnode_entity}): it starts that C node's entity
%% processes ({@link shardnode_entity_proc}), watches them and the C
%% node, and ends them all when the C node may no longer run them.
%%
%% From the C node's regions (docs/architecture.md, "Entities written in
%% Erlang and Elixir"):
%%
%% <ul>
%% <li>`{'$shardnode_host', start, Region, Type, Id, Stored, Seq, Msg}':
%%   starts entity `Id' of `Type' from `Stored' with its first message;
%%   its completion names its pid to the region.</li>
%% <li>`{'$shardnode_host', 'end', Region, Token, Pids}': a shard of
%%   `Region' leaves; its entities' processes `Pids' are told to stop
%%   (`moved'), and once none of them runs, the region gets
%%   `{'$shardnode_stopped', Token}': only then may another member start
%%   them.</li>
%% <li>`{'$shardnode_host', lease, Ms}': the C node may run entities for
%%   `Ms' more milliseconds (its quorum lease, less a margin for the
%%   message's way); without a renewal by then, every entity of that C
%%   node is ended.</li>
%% <li>`{'$shardnode_host', batch, Items}': what the C node's regions
%%   had for this host in one turn of its loop, in order, each item
%%   `{Pid, Seq, Msg}' (a message for a running entity, given to it as
%%   `{'$shardnode_entity', Seq, Msg}'), `{start, Region, Type, Id, Stored,
%%   Seq, Msg}' (as above) or `{stop, Pid, Reason}' (given as
%%   `{'$shardnode_stop', Reason}'). One distribution message carries
%%   them all, and the dispatcher hands them out with local sends.</li>
%% <li>`{'$shardnode_host', batches}': the C node takes its regions'
%%   messages batched too. Entities started from then on send their
%%   completions here (`{'$shardnode_completed', Region, Done}'), and the
%%   dispatcher sends each region what it has for it, in the order it came,
%%   as `{'$shardnode_batch', [Msg]}' once its mailbox is empty — crash
%%   reports and `stopped' among them, so nothing overtakes a completion.
%%   Without it (a C node of an older release) every message goes on its
%%   own.</li>
%% </ul>
%%
%% To a region: `{'$shardnode_crashed', Id, Pid, Reason}' when an entity
%% ended for any reason but its own end (a stop it chose or was told):
%% a crash, or an exit of its callbacks with any reason, `normal' too (the
%% process tells that one first: `{'$shardnode_exit', Pid, normal}'), and
%% `killed' for each of them when the lease runs out. The region answers
%% its call in flight `{error, {entity_crashed, Reason}}' and logs it; the
%% host adds no line of its own (OTP's crash report of a crash aside).
%%
%% A `nodedown' of the C node ends its entities at once, and the
%% dispatcher with them: entity processes never outlive their C node. The
%% entities are linked to the dispatcher, so they end with it whatever
%% ends it; it traps exits, so an entity that ends does not end it. The
%% host ({@link shardnode_entity_host}) sends `{'$shardnode_host', types,
%% Types}' when its types change.
-module(shardnode_entity_dispatcher).
-behaviour(gen_server).

-export([start_link/2, entities/1, batched/1]).
-export([init/1, handle_call/3, handle_cast/2, handle_info/2]).

-record(dispatcher, {cnode :: node(),
                     types :: #{atom() => module()},
                     %% every live entity: its region, type and id
                     entities = #{} :: #{pid() => {pid(), atom(), term()}},
                     %% entities whose callback exited `normal': the reason their 'DOWN' means
                     exits = #{} :: #{pid() => term()},
                     %% shards leaving a region: {Region, Token, processes still to end}
                     ending = [] :: [{pid(), non_neg_integer(), [pid()]}],
                     lease :: reference() | undefined,
                     %% the C node takes its regions' messages batched
                     batched = false :: boolean(),
                     %% batched: what each region is still to be sent, newest first
                     out = #{} :: #{pid() => [term()]}}).

%% @doc Starts the dispatcher of `CNode' for `Types' (type => module),
%% linked to the caller.
-spec start_link(node(), #{atom() => module()}) -> {ok, pid()} | {error, term()}.
start_link(CNode, Types) ->
    gen_server:start_link(?MODULE, {CNode, Types}, []).

%% @doc The live entities: `{Type, Id, Pid}' each.
-spec entities(pid()) -> [{atom(), term(), pid()}].
entities(Dispatcher) ->
    gen_server:call(Dispatcher, entities).

%% @doc Whether the C node took the offer of batches: its regions' messages
%% come batched, and its entities' completions go so.
-spec batched(pid()) -> boolean().
batched(Dispatcher) ->
    gen_server:call(Dispatcher, batched).

-spec init({node(), #{atom() => module()}}) -> {ok, #dispatcher{}}.
init({CNode, Types}) ->
    process_flag(trap_exit, true),
    true = erlang:monitor_node(CNode, true),
    {ok, #dispatcher{cnode = CNode, types = Types}}.

-spec handle_call(term(), gen_server:from(), #dispatcher{}) ->
          {reply, term(), #dispatcher{}} | {reply, term(), #dispatcher{}, 0}.
handle_call(entities, _From, #dispatcher{entities = Es} = D) ->
    reply([{T, Id, Pid} || {Pid, {_, T, Id}} <- maps:to_list(Es)], D);
handle_call(batched, _From, #dispatcher{batched = B} = D) ->
    reply(B, D);
handle_call(_Other, _From, D) ->
    reply({error, bad_request}, D).

-spec handle_cast(term(), #dispatcher{}) -> {noreply, #dispatcher{}} | {noreply, #dispatcher{}, 0}.
handle_cast(_Msg, D) ->
    noreply(D).

-spec handle_info(term(), #dispatcher{}) ->
          {noreply, #dispatcher{}} | {noreply, #dispatcher{}, 0} | {stop, term(), #dispatcher{}}.
handle_info({'$shardnode_completed', Region, Done}, D) ->
    noreply(to_region(Region, Done, D));
handle_info({'$shardnode_host', batch, Items}, D) when is_list(Items) ->
    noreply(lists:foldl(fun item/2, D, Items));
handle_info(timeout, D) ->
    {noreply, flush(D)};
handle_info({'$shardnode_host', start, Region, Type, Id, Stored, Seq, Msg}, D) ->
    noreply(start(Region, Type, Id, Stored, Seq, Msg, D));
handle_info({'$shardnode_host', batches}, D) ->
    noreply(D#dispatcher{batched = true});
handle_info({'$shardnode_host', 'end', Region, Token, Pids}, #dispatcher{entities = Es, ending = Ending} = D)
  when is_pid(Region), is_integer(Token), is_list(Pids) ->
    Live = [P || P <- Pids, is_map_key(P, Es)],
    _ = [P ! {'$shardnode_stop', moved} || P <- Live],
    noreply(ended(D#dispatcher{ending = [{Region, Token, Live} | Ending]}));
handle_info({'$shardnode_host', lease, Ms}, #dispatcher{lease = Old} = D)
  when is_integer(Ms), Ms >= 0 ->
    _ = cancel(Old),
    noreply(D#dispatcher{lease = erlang:start_timer(Ms, self(), lease)});
handle_info({timeout, Ref, lease}, #dispatcher{lease = Ref, cnode = C, entities = Es} = D) ->
    %% Said only when it stops something: a C node that starts (or has
    %% no quorum yet) gives a lease of 0 before it has entities here.
    _ = map_size(Es) > 0 andalso
        logger:warning("shardnode: the lease of ~p ran out: its ~b entities stop", [C, map_size(Es)]),
    D1 = end_all(D#dispatcher{lease = undefined}),
    %% The C node is still there: each region hears that its entities'
    %% processes are gone (killed, as each 'DOWN' would say), so it answers
    %% the call one was handling and starts the entity again from its last
    %% completed state at the next message, instead of sending that message
    %% to a process that no longer runs. After the kills, so a start that
    %% answers this cannot meet the old process still running.
    D2 = lists:foldl(fun({Pid, {Region, _, Id}}, Acc) ->
                             to_region(Region, {'$shardnode_crashed', Id, Pid, killed}, Acc)
                     end, D1, maps:to_list(Es)),
    noreply(D2);
handle_info({'$shardnode_exit', Pid, Reason}, #dispatcher{entities = Es, exits = Exits} = D)
  when is_map_key(Pid, Es) ->
    noreply(D#dispatcher{exits = Exits#{Pid => Reason}});
handle_info({'DOWN', _Ref, process, Pid, Down}, #dispatcher{entities = Es, exits = Exits} = D) ->
    {Reason, Told, Exits1} = case maps:take(Pid, Exits) of
                                 {Exited, Rest1} -> {Exited, true, Rest1};
                                 error -> {Down, false, Exits}
                             end,
    case maps:take(Pid, Es) of
        {{Region, _Type, Id}, Rest} ->
            D1 = crashed(Region, Id, Pid, Reason, Told, D),
            Ending = [{R, T, lists:delete(Pid, Ps)} || {R, T, Ps} <- D#dispatcher.ending],
            noreply(ended(D1#dispatcher{entities = Rest, exits = Exits1, ending = Ending}));
        error ->
            noreply(D#dispatcher{exits = Exits1})
    end;
handle_info({nodedown, C}, #dispatcher{cnode = C} = D) ->
    {stop, normal, end_all(D)};
handle_info({'EXIT', _Entity, _Reason}, D) ->
    noreply(D); %% the entity's 'DOWN' tells what it means
handle_info({'$shardnode_host', types, Types}, D) when is_map(Types) ->
    noreply(D#dispatcher{types = Types});
handle_info(_Other, D) ->
    noreply(D).

%% One item of a batch, in its turn.
item({Pid, Seq, Msg}, D) when is_pid(Pid) ->
    Pid ! {'$shardnode_entity', Seq, Msg},
    D;
item({start, Region, Type, Id, Stored, Seq, Msg}, D) ->
    start(Region, Type, Id, Stored, Seq, Msg, D);
item({stop, Pid, Reason}, D) when is_pid(Pid) ->
    Pid ! {'$shardnode_stop', Reason},
    D;
item(_Other, D) ->
    D.

start(Region, Type, Id, Stored, Seq, Msg, #dispatcher{types = Types, entities = Es, batched = B} = D) ->
    case Types of
        #{Type := Module} ->
            DoneTo = case B of true -> self(); false -> Region end,
            {Pid, _Ref} = shardnode_entity_proc:start(Region, DoneTo, Module, Id, Stored, {Seq, Msg}),
            D#dispatcher{entities = Es#{Pid => {Region, Type, Id}}};
        #{} ->
            to_region(Region, {'$shardnode_crashed', Id, undefined, {unknown_type, Type}}, D)
    end.

%% A message for a region: batched, kept until the mailbox is empty (in
%% the order it came); else sent now.
to_region(Region, Msg, #dispatcher{batched = true, out = Out} = D) ->
    D#dispatcher{out = Out#{Region => [Msg | maps:get(Region, Out, [])]}};
to_region(Region, Msg, D) ->
    Region ! Msg,
    D.

%% What the regions are to be sent leaves once the mailbox is empty: a
%% timeout of 0 comes only then (gen_server).
noreply(#dispatcher{out = Out} = D) when map_size(Out) > 0 -> {noreply, D, 0};
noreply(D) -> {noreply, D}.

reply(Reply, #dispatcher{out = Out} = D) when map_size(Out) > 0 -> {reply, Reply, D, 0};
reply(Reply, D) -> {reply, Reply, D}.

flush(#dispatcher{out = Out} = D) ->
    _ = [Region ! {'$shardnode_batch', lists:reverse(Msgs)} || {Region, Msgs} <- maps:to_list(Out)],
    D#dispatcher{out = #{}}.

%% Ends every entity at once (kill: their C node may no longer run them,
%% so none may finish a message first).
end_all(#dispatcher{entities = Es, ending = Ending} = D) ->
    _ = [exit(Pid, kill) || Pid <- maps:keys(Es)],
    ended(D#dispatcher{entities = #{}, exits = #{}, ending = [{R, T, []} || {R, T, _} <- Ending]}).

%% Tells each region whose leaving shard has no process left that it may
%% go: `{'$shardnode_stopped', Token}'.
ended(#dispatcher{ending = Ending} = D) ->
    {Done, Left} = lists:partition(fun({_, _, Ps}) -> Ps =:= [] end, Ending),
    lists:foldl(fun({R, T, _}, Acc) -> to_region(R, {'$shardnode_stopped', T}, Acc) end,
                D#dispatcher{ending = Left}, Done).

%% `normal' not told by the process is its own end (a stop it chose or
%% was told): its region knows. Anything else, an exit(normal) of a
%% callback included (`Told'), is the region's to answer and log (its C
%% node's log has it, once).
crashed(_Region, _Id, _Pid, normal, false, D) ->
    D;
crashed(Region, Id, Pid, Reason, _Told, D) ->
    to_region(Region, {'$shardnode_crashed', Id, Pid, Reason}, D).

cancel(undefined) -> ok;
cancel(Ref) -> erlang:cancel_timer(Ref).
