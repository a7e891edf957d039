%% @doc common_test helpers: boot C nodes (and BEAM peers) for a suite, and
%% prove they are gone afterwards.
%%
%% ```
%% init_per_suite(Config0) ->
%%     {[C1, C2], Config} =
%%         shardnode_ct:start_nodes(Config0, [#{}, #{types => [counter]}]),
%%     [{c1, C1}, {c2, C2} | Config].
%%
%% end_per_suite(Config) ->
%%     shardnode_ct:stop_nodes(Config).
%% '''
%%
%% {@link start_nodes/2} starts the nodes one after the other, each waiting
%% until it answers, and names each one unless its options do
%% (`"c<os pid>_<n>@127.0.0.1"', unique across runs on one host). It fails
%% the test (`ct:fail/1') when a node does not start, with the node's
%% output in the log. {@link stop_nodes/1} stops every node started into
%% the Config, last started first, and fails the test unless each one left
%% gracefully (exit status 0 after SIGTERM) and is provably gone: not in
%% epmd, and `pang' to a ping.
%%
%% The test node itself must be distributed; `rebar3 ct' does that with
%% `{dist_node, [{name, ...}, {setcookie, ...}]}' in rebar.config.
-module(shardnode_ct).
-behaviour(supervisor). %% start_supervised/2's supervisor

-export([start_nodes/2,
         start_nodes_at_once/2,
         start_cluster/3,
         await_converged/2,
         await_member_status/4,
         restart_node/2,
         kill_and_await_failover/2,
         await_entity/5,
         track_instances/1,
         assert_no_duplicate_instances/1,
         shard_homes/2,
         assert_each_shard_once/2,
         assert_clean/0,
         start_supervised/2,
         stop_supervised/1,
         stop_nodes/1,
         stop_nodes/2,
         stop_all_nodes/1,
         started_nodes/1,
         gone/1,
         unique_name/1,
         log_output/1,
         start_peer/2,
         start_peer/3,
         stop_peer/1,
         tls_config/2,
         start_tls_peer/2,
         members/1,
         member_status/2,
         pause/1,
         resume/1,
         free_port/0,
         free_ports/1,
         metrics_page/1,
         metrics_page/2,
         metric_value/2]).
-export([init/1]).

-define(KEY, shardnode_nodes).
-define(OPTS_KEY, shardnode_node_opts).
-define(STOP_GRACE_KEY, shardnode_stop_grace_ms).
-define(DEFAULT_STOP_GRACE, 10000).
-define(GONE_TIMEOUT, 10000).
%% how often a wait looks again
-define(POLL_MS, 100).

-type config() :: [{atom(), term()}].

%% @doc Starts one C node per element of `OptsList' (options of
%% {@link shardnode:start_node/1}; `#{}' for all defaults), in order, so
%% that later nodes can `join' earlier ones. Returns the node names in the
%% same order and the Config with them recorded for {@link stop_nodes/1}.
%% A node without `name' or `sname' gets a unique long name on 127.0.0.1.
-spec start_nodes(config(), [shardnode:start_opts()]) -> {[node()], config()}.
start_nodes(Config, OptsList) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Started = start_all(OptsList, []),
    {[Node || {Node, _} <- Started], record(Config, Started)}.

%% The nodes started, and the options each was started with (for
%% restart_node/2), into the Config.
record(Config, Started) ->
    Nodes = [Node || {Node, _} <- Started],
    Opts = maps:merge(proplists:get_value(?OPTS_KEY, Config, #{}), maps:from_list(Started)),
    lists:keystore(?OPTS_KEY, 1, lists:keystore(?KEY, 1, Config, {?KEY, started_nodes(Config) ++ Nodes}),
                   {?OPTS_KEY, Opts}).

%% @doc Starts one C node per element of `OptsList' all at once, as a
%% deployment starts its pods: every node's OS process is launched before
%% any is waited for, so nodes that `join' each other race as they would in
%% production. Otherwise as {@link start_nodes/2}: names, the Config, and a
%% failed test (after stopping the ones that did start) when any does not
%% answer.
-spec start_nodes_at_once(config(), [shardnode:start_opts()]) -> {[node()], config()}.
start_nodes_at_once(Config, OptsList) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Parent = self(),
    Starts = [begin
                  Ref = make_ref(),
                  Named = named(Opts),
                  _ = spawn_link(fun() -> Parent ! {Ref, shardnode:start_node(Named)} end),
                  {Ref, Named}
              end || Opts <- OptsList],
    Results = [receive {Ref, Result} -> {Named, Result} end || {Ref, Named} <- Starts],
    Nodes = [Node || {_, {ok, Node}} <- Results],
    case [{Named, Reason} || {Named, {error, Reason}} <- Results] of
        [] ->
            ct:log("started C nodes at once: ~0tp", [Nodes]),
            {Nodes, record(Config, [{Node, Named} || {Named, {ok, Node}} <- Results])};
        [{Named, Reason} | _] = Failed ->
            _ = [log_failure(N, R) || {N, R} <- Failed],
            _ = [shardnode:stop_node(Node) || Node <- Nodes],
            ct:fail({start_node_failed, node_opt(Named), summary(Reason)})
    end.

%% @doc Starts a cluster of `N' C nodes as a deployment does: each given
%% the same seed list (all N names), all at once, with `Opts' (options of
%% {@link shardnode:start_node/1} but `name' and `join', which this sets).
%% Returns once the cluster has converged ({@link await_converged/2}, 30 s),
%% the nodes oldest first, and the Config with them recorded as
%% {@link start_nodes/2} records them.
%%
%% ```
%% {[A, B, C], Config1} = shardnode_ct:start_cluster(Config, 3, #{entities => #{order => order}}).
%% '''
-spec start_cluster(config(), pos_integer(), shardnode:start_opts()) -> {[node()], config()}.
start_cluster(Config, N, Opts) when is_integer(N), N > 0, is_map(Opts) ->
    Names = [list_to_atom(unique_name("c") ++ "@127.0.0.1") || _ <- lists:seq(1, N)],
    {Nodes, Config1} = start_nodes_at_once(Config, [Opts#{name => atom_to_list(Name), join => Names}
                                                    || Name <- Names]),
    ok = await_converged(Nodes, 30000),
    {members(hd(Nodes)), Config1}.

%% @doc Waits until the cluster of `Nodes' has converged: every node lists
%% exactly `Nodes' as up members, in the same order (so they agree on the
%% oldest, where every coordinator runs), and every region of every node
%% is registered with that coordinator. Fails the test
%% (`{not_converged, What}', with what each node said last) after
%% `Timeout' ms.
-spec await_converged([node()], timeout()) -> ok.
await_converged(Nodes, Timeout) ->
    Views = fun() -> [{N, views(N)} || N <- Nodes] end,
    Converged = fun() -> converged(Nodes, Views()) end,
    case shardnode_poll:until(Converged, Timeout) of
        ok -> ok;
        timeout -> ct:fail({not_converged, Views()})
    end.

converged(Nodes, [{_, {[Oldest | _] = Members, _}} | _] = All) ->
    lists:sort(Members) =:= lists:sort(Nodes)
        andalso lists:all(fun({_, {Ms, Regions}}) ->
                                  Ms =:= Members andalso lists:all(fun(R) -> R =:= {true, Oldest} end, Regions)
                          end, All);
converged(_Nodes, _Views) ->
    false.

%% A node's up members (oldest first) and, per region, whether it is
%% registered and with which coordinator's node.
views(Node) ->
    Up = case members(Node) of
             error -> [];
             Ms -> Ms
         end,
    Regions = case catch gen_server:call({shardnode, Node}, shard_types, 2000) of
                  {ok, Types} ->
                      [case catch sys:get_state({T, Node}, 2000) of
                           #{registered := R, coordinator := C} -> {R, C};
                           Other -> {error, Other}
                       end || T <- Types];
                  Other -> [{error, Other}]
              end,
    {Up, Regions}.

%% @doc Waits until `Observer' gives member `Node' the status `Status'
%% (`up', `leaving', `unreachable', `down', ..., or `absent' once it is
%% removed from the list), as {@link member_status/2} reads it. Fails the
%% test (`{member_status, Node, Status, Seen}') after `Timeout' ms.
-spec await_member_status(node(), node(), atom(), timeout()) -> ok.
await_member_status(Observer, Node, Status, Timeout) ->
    case shardnode_poll:until(fun() -> member_status(Observer, Node) =:= Status end, Timeout) of
        ok -> ok;
        timeout -> ct:fail({member_status, Node, Status, {seen_by, Observer, member_status(Observer, Node)}})
    end.

%% @doc Restarts `Node' as an operator does: SIGTERM (it leaves
%% gracefully, its shards handed off), waits until it is gone, then starts
%% it again with the options it was started with (recorded in `Config' by
%% {@link start_nodes/2}, {@link start_nodes_at_once/2} or
%% {@link start_cluster/3}), and returns once it answers. Fails the test
%% if it does not stop cleanly or does not start again.
-spec restart_node(config(), node()) -> ok.
restart_node(Config, Node) ->
    Opts = case proplists:get_value(?OPTS_KEY, Config, #{}) of
               #{Node := O} -> O;
               #{} -> ct:fail({not_started_by_shardnode_ct, Node})
           end,
    ok = stop_nodes(Config, [Node]),
    case shardnode:start_node(Opts) of
        {ok, Node} -> ct:log("restarted C node ~ts", [Node]);
        {error, Reason} -> log_failure(Opts, Reason), ct:fail({restart_failed, Node, summary(Reason)})
    end.

%% @doc Kills `Node' with SIGKILL, as a crash would, and returns once
%% every shard it hosted has a new home that answers: for each of its
%% types, a look at an entity of each such shard ({@link
%% shardnode:entity_state/3}, which starts nothing) is made through
%% another member until one answers. That takes the failure detection,
%% the downing (`stable_after_ms') and the new allocation. Returns the
%% shards it hosted, `#{Type => [Shard]}'. Fails the test
%% (`{failover_timeout, Node, #{Type => [Shard]}}', the shards without a
%% home yet) after `Timeout' ms.
%%
%% ```
%% #{order := Shards} = shardnode_ct:kill_and_await_failover(B, 60000),
%% ok = shardnode_ct:await_member_status(A, B, down, 10000).
%% '''
-spec kill_and_await_failover(node(), timeout()) -> #{atom() => [non_neg_integer()]}.
kill_and_await_failover(Node, Timeout) ->
    {ok, Types} = shardnode:shard_types(Node),
    {ok, Members} = shardnode:members(Node),
    Others = [N || #{node := N, status := up} <- Members, N =/= Node],
    Held = maps:from_list([{T, hosted_shards(Node, T)} || T <- Types]),
    Counts = maps:from_list([{T, number_of_shards(Node, T)} || T <- Types]),
    ok = shardnode:kill_node(Node),
    ct:log("killed C node ~ts (kill -9); the shards it hosted: ~p", [Node, Held]),
    Deadline = erlang:monotonic_time(millisecond) + Timeout,
    case await_homes(Others, Counts, Held, Deadline) of
        Left when map_size(Left) =:= 0 -> Held;
        Left -> ct:fail({failover_timeout, Node, Left})
    end.

%% Looks at the shards left (#{Type => [Shard]}) until each has answered
%% or the deadline passes; returns those that have not.
await_homes(Others, Counts, Left0, Deadline) ->
    Left = maps:filter(fun(_T, Shards) -> Shards =/= [] end,
                       maps:map(fun(T, Shards) ->
                                        [S || S <- Shards,
                                              not answers(Others, T, id_of_shard(S, maps:get(T, Counts)))]
                                end, Left0)),
    case map_size(Left) =:= 0 orelse erlang:monotonic_time(millisecond) >= Deadline of
        true ->
            Left;
        false ->
            receive after ?POLL_MS -> ok end,
            await_homes(Others, Counts, Left, Deadline)
    end.

%% Whether a look at entity Id of Type, made through the members in turn,
%% is answered by the entity's home.
answers(Others, Type, Id) ->
    lists:any(fun(N) ->
                      case shardnode:call(N, Type, Id, '$shardnode_state', 1000) of
                          {ok, _} -> true;
                          {error, not_running} -> true;
                          {error, no_state} -> true;
                          _ -> false
                      end
              end, Others).

%% The shards the region of Type on Node hosts.
hosted_shards(Node, Type) ->
    case shardnode:shard_region_state(Node, Type) of
        {ok, Shards} when is_map(Shards) -> lists:sort(maps:keys(Shards));
        _ -> []
    end.

number_of_shards(Node, Type) ->
    {ok, #{settings := #{number_of_shards := N}}} = gen:call({Type, Node}, system, get_state, 5000),
    N.

%% The first of the integers 0, 1, ... in shard S of N.
id_of_shard(S, N) ->
    id_of_shard(S, N, 0).

id_of_shard(S, N, K) ->
    case shardnode:shard_id(K, N) of
        S -> K;
        _ -> id_of_shard(S, N, K + 1)
    end.

%% @doc Waits until the entity `Id' of `Type' holds a state for which
%% `Pred' returns `true', looking at it through `Node' ({@link
%% shardnode:entity_state/3}: nothing is sent to the entity itself, and
%% nothing is started). Returns `{ok, State}'. Fails the test
%% (`{await_entity, Type, Id, Seen}', Seen the last look: `{ok, State}',
%% `{error, not_running}', ...) after `Timeout' ms.
%%
%% ```
%% {ok, #{paid := true}} = shardnode_ct:await_entity(A, order, <<"o-1">>,
%%                                                   fun(#{paid := P}) -> P end, 10000).
%% '''
-spec await_entity(node(), atom(), shardnode:entity_id(), fun((term()) -> boolean()), timeout()) -> {ok, term()}.
await_entity(Node, Type, Id, Pred, Timeout) ->
    Look = fun() -> shardnode:entity_state(Node, Type, Id) end,
    case look_until(Look, Pred, erlang:monotonic_time(millisecond) + Timeout) of
        {ok, _} = Found -> Found;
        {timeout, Seen} -> ct:fail({await_entity, Type, Id, Seen})
    end.

%% Looks until a look is {ok, State} with Pred(State) true, or the
%% deadline has passed: then {timeout, Seen}, the last look. Looks at
%% least once, and once more at the deadline.
look_until(Look, Pred, Deadline) ->
    Seen = Look(),
    Holds = case Seen of
                {ok, State} -> catch Pred(State);
                _ -> false
            end,
    Left = Deadline - erlang:monotonic_time(millisecond),
    if
        Holds =:= true -> Seen;
        Left =< 0 -> {timeout, Seen};
        true -> receive after min(?POLL_MS, Left) -> ok end,
                look_until(Look, Pred, Deadline)
    end.

%% @doc Starts counting the instances of the entities of `Types', C and
%% Erlang types alike, forgetting any counted before: every node the kit
%% starts from now on ({@link start_cluster/3}, {@link start_nodes/2},
%% {@link restart_node/2}, {@link start_supervised/2}, ...) gets the test
%% setting `instance_reports_to' and reports each incarnation of an
%% entity as it begins and ends, to a collector on this node (a node
%% started otherwise takes `config => #{instance_reports_to => node()}').
%% Call it before starting the nodes, in `init_per_testcase'; {@link
%% assert_clean/0} stops the collector.
%%
%% ```
%% ok = shardnode_ct:track_instances([order]),
%% {Nodes, Config1} = shardnode_ct:start_cluster(Config, 3, #{entities => #{order => order}}),
%% ...
%% {ok, Seen} = shardnode_ct:assert_no_duplicate_instances([order]).
%% '''
-spec track_instances([atom()]) -> ok.
track_instances(Types) ->
    shardnode_instances:start(Types).

%% @doc Fails the test (`{duplicate_instances, [{Type, Id, [{Node,
%% StartUs, StopUs | running}]}]}') if any entity of `Types' ever ran on
%% two members at once since {@link track_instances/1}: two incarnations
%% on two members whose lifetimes overlap, a killed member's ending when
%% its connection to this node did. Returns `{ok, N}', the number of
%% incarnations seen, so a test can check that it saw any.
-spec assert_no_duplicate_instances([atom()]) -> {ok, non_neg_integer()}.
assert_no_duplicate_instances(Types) ->
    All = [I || {_, T, _, _, _} = I <- shardnode_instances:incarnations(), lists:member(T, Types)],
    ByEntity = lists:foldl(fun({Node, T, Id, Start, Stop}, Acc) ->
                                   maps:update_with({T, Id}, fun(L) -> [{Node, Start, Stop} | L] end,
                                                    [{Node, Start, Stop}], Acc)
                           end, #{}, All),
    Twice = [{T, Id, lists:reverse(L)} || {{T, Id}, L} <- maps:to_list(ByEntity), overlapping(lists:reverse(L))],
    ct:log("instances of ~p: ~b incarnations of ~b entities, ~b run twice at once",
           [Types, length(All), map_size(ByEntity), length(Twice)]),
    case Twice of
        [] -> {ok, length(All)};
        _ -> ct:fail({duplicate_instances, lists:sort(Twice)})
    end.

%% Whether two incarnations on two members overlap.
overlapping(Incarnations) ->
    lists:any(fun({{N1, S1, E1}, {N2, S2, E2}}) ->
                      N1 =/= N2 andalso before(S1, E2) andalso before(S2, E1)
              end, [{A, B} || A <- Incarnations, B <- Incarnations, A < B]).

before(_Start, running) -> true;
before(Start, End) -> Start < End.

%% @doc Where each shard of `Type' lives, as the cluster's regions report
%% it to `Node' (`get_cluster_sharding_stats'): `#{ShardId => [Node]}',
%% one node per shard in a healthy cluster (see
%% {@link assert_each_shard_once/2}). Shards no region has started are
%% not in it.
-spec shard_homes(node(), atom()) -> #{non_neg_integer() => [node()]}.
shard_homes(Node, Type) ->
    {ok, Stats} = gen_server:call({Type, Node}, get_cluster_sharding_stats, 10000),
    maps:fold(fun(Member, Shards, Acc) ->
                      maps:fold(fun(S, _Count, A) -> maps:update_with(S, fun(L) -> [Member | L] end, [Member], A) end,
                                Acc, Shards)
              end, #{}, Stats).

%% @doc Fails the test (`{shards_hosted_twice, #{Shard => Nodes}}') if any
%% shard of `Type' is hosted by two regions at once, as `Node' sees the
%% cluster ({@link shard_homes/2}).
-spec assert_each_shard_once(node(), atom()) -> ok.
assert_each_shard_once(Node, Type) ->
    Twice = maps:filter(fun(_, Ns) -> length(Ns) > 1 end, shard_homes(Node, Type)),
    case map_size(Twice) of
        0 -> ok;
        _ -> ct:fail({shards_hosted_twice, Twice})
    end.

%% @doc Fails the test (`{nodes_left_running, Nodes}') if any C node
%% started through the shardnode application on this node still runs:
%% for `end_per_suite', once the suite has stopped its nodes.
-spec assert_clean() -> ok.
assert_clean() ->
    ok = shardnode_instances:stop(),
    case shardnode:which_nodes() of
        [] -> ok;
        Running -> ct:fail({nodes_left_running, Running})
    end.

%% @doc Starts a C node under a supervisor of the test's own, as a team's
%% application would run it (`shardnode:child_spec/1': restarted at once
%% when its OS process dies, with the same options), and returns
%% `{Node, Sup}' once the node answers. A kill -9 of the node's OS
%% process ({@link shardnode:os_pid/1}) has it started again; end both
%% with {@link stop_supervised/1}. The supervisor is linked to the
%% caller.
%%
%% ```
%% {A, Sup} = shardnode_ct:start_supervised(Config, #{join => Seeds}),
%% {ok, Old} = shardnode:os_pid(A),
%% [] = os:cmd("kill -9 " ++ integer_to_list(Old)),
%% ...
%% ok = shardnode_ct:stop_supervised(Sup).
%% '''
-spec start_supervised(config(), shardnode:start_opts()) -> {node(), pid()}.
start_supervised(_Config, Opts) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Named = named(Opts),
    {ok, Sup} = supervisor:start_link(?MODULE, {supervised, [shardnode:child_spec(Named)]}),
    [Node] = [N || {{shardnode, N}, _, _, _} <- supervisor:which_children(Sup)],
    ct:log("started C node ~ts under supervisor ~p", [Node, Sup]),
    {Node, Sup}.

%% @doc Stops a supervisor of {@link start_supervised/2}, and with it its
%% node (SIGTERM: it leaves gracefully); returns once both are gone.
-spec stop_supervised(pid()) -> ok.
stop_supervised(Sup) ->
    Ref = monitor(process, Sup),
    unlink(Sup),
    exit(Sup, shutdown),
    receive {'DOWN', Ref, process, Sup, _} -> ok end.

%% @private supervisor callback of start_supervised/2: restarts at once, as
%% an application's supervisor does, a few times in a short while.
init({supervised, Children}) ->
    {ok, {#{strategy => one_for_one, intensity => 20, period => 10}, Children}}.

%% @doc Stops every node recorded in `Config' by {@link start_nodes/2} (see
%% {@link stop_nodes/2}).
-spec stop_nodes(config()) -> ok.
stop_nodes(Config) ->
    stop_nodes(Config, started_nodes(Config)).

%% @doc Stops the given nodes, last first, logging each one's output, and
%% proves each one gone. Fails the test unless every node exited with
%% status 0 after SIGTERM (or had already been killed by the test, see
%% {@link shardnode:kill_node/1}) and is gone. The SIGTERM grace period is
%% `?config(shardnode_stop_grace_ms, Config)', default 10000.
-spec stop_nodes(config(), [node()]) -> ok.
stop_nodes(Config, Nodes) ->
    Grace = proplists:get_value(?STOP_GRACE_KEY, Config, ?DEFAULT_STOP_GRACE),
    Results = [{Node, stop_one(Node, Grace)} || Node <- lists:reverse(Nodes)],
    case [R || {_, Result} = R <- Results, Result =/= ok] of
        [] -> ok;
        Failed -> ct:fail({nodes_not_stopped_cleanly, Failed})
    end.

%% @doc Stops the nodes recorded in `Config' (last started first), then
%% every other node this node's shardnode application runs: one a case
%% started itself and did not get to stop, because it failed first. For
%% `end_per_testcase'; as {@link stop_nodes/2}, fails the test unless each
%% left cleanly and is gone.
-spec stop_all_nodes(config()) -> ok.
stop_all_nodes(Config) ->
    Started = started_nodes(Config),
    stop_nodes(Config, Started ++ (shardnode:which_nodes() -- Started)).

%% @doc The nodes recorded in `Config' by {@link start_nodes/2}.
-spec started_nodes(config()) -> [node()].
started_nodes(Config) ->
    proplists:get_value(?KEY, Config, []).

%% @doc Whether `Node' is gone: not registered in this host's epmd and, when
%% this node can talk to it (both long names or both short names), `pang'
%% to a ping.
-spec gone(node()) -> boolean().
gone(Node) ->
    not shardnode_node:registered(Node)
        andalso not (pingable(Node) andalso net_adm:ping(Node) =:= pong).

%% @doc The members `Node' lists as `up', oldest first (its admin's
%% `members'), or `error' when it does not answer within 2 s.
-spec members(node()) -> [node()] | error.
members(Node) ->
    case catch gen_server:call({shardnode, Node}, members, 2000) of
        {ok, Ms} -> [M || #{node := M, status := up} <- Ms];
        _ -> error
    end.

%% @doc The status `Node' gives member `Of' (`up', `unreachable', `down',
%% ...), `absent' when it lists no such member, `unknown' when it does not
%% answer within 2 s.
-spec member_status(node(), node()) -> atom().
member_status(Node, Of) ->
    case catch gen_server:call({shardnode, Node}, members, 2000) of
        {ok, Ms} ->
            case [S || #{node := M, status := S} <- Ms, M =:= Of] of
                [S] -> S;
                [] -> absent
            end;
        _ -> unknown
    end.

%% @doc SIGSTOP to a node started by {@link shardnode:start_node/1}: it stops
%% answering while its sockets stay open, as a hung machine's would.
-spec pause(node()) -> ok.
pause(Node) -> signal(Node, "STOP").

%% @doc SIGCONT: a paused node goes on.
-spec resume(node()) -> ok.
resume(Node) -> signal(Node, "CONT").

signal(Node, Sig) ->
    {ok, OsPid} = shardnode:os_pid(Node),
    [] = os:cmd(io_lib:format("kill -~s ~b", [Sig, OsPid])),
    ok.

%% @doc A node name (the part before the `@') unique on this host across
%% test runs: `Prefix', the OS pid of this node, and a counter.
-spec unique_name(string()) -> string().
unique_name(Prefix) ->
    lists:concat([Prefix, os:getpid(), "_", erlang:unique_integer([positive])]).

%% @doc Writes the last 200 lines of a node's output into the test log.
-spec log_output(node()) -> ok.
log_output(Node) ->
    case shardnode:output(Node) of
        {ok, Lines} ->
            ct:log("~ts: last ~b lines of output:~n~ts",
                   [Node, length(Lines), [[L, $\n] || L <- Lines]]);
        {error, not_found} ->
            ct:log("~ts: not running (no output to show)", [Node])
    end.

%% @doc Starts a BEAM peer node `Name@127.0.0.1' (long names) with this
%% node's cookie, connected to this node by Erlang distribution, with
%% `Args' added to its command line. The peer is linked to the caller.
%%
%% ```
%% {ok, Peer, PeerNode} = shardnode_ct:start_peer(Config, "p1", []),
%% pong = erpc:call(PeerNode, net_adm, ping, [CNode]),
%% ok = shardnode_ct:stop_peer(Peer).
%% '''
-spec start_peer(config(), atom() | string(), [string()]) ->
          {ok, pid(), node()} | {error, term()}.
start_peer(Config, Name, Args) ->
    start_peer(Config, #{name => Name, args => Args}).

%% @doc Starts a BEAM peer node with `peer:start_link/1' options, with these
%% defaults: a unique `name', `host => "127.0.0.1"', `longnames => true',
%% this node's cookie (or `cookie => Cookie'), and the default connection
%% (Erlang distribution) unless `connection' is given. With
%% `longnames => false' the host defaults to this host's short name. The
%% shardnode application's code is in the peer's code path.
%%
%% Use `connection => standard_io' for a peer this node must not be
%% connected to by distribution (another cookie, short names), and drive it
%% with `peer:call/4':
%%
%% ```
%% {ok, Peer, _} = shardnode_ct:start_peer(Config, #{cookie => wrong,
%%                                                  connection => standard_io}),
%% pang = peer:call(Peer, net_adm, ping, [CNode]).
%% '''
-spec start_peer(config(), map()) -> {ok, pid(), node()} | {error, term()}.
start_peer(_Config, Opts) ->
    Longnames = maps:get(longnames, Opts, true),
    Defaults = #{name => unique_name("peer"),
                 host => default_host(Longnames),
                 longnames => Longnames,
                 args => []},
    Merged = maps:merge(Defaults, Opts),
    Cookie = case maps:get(cookie, Merged, erlang:get_cookie()) of
                 C when is_atom(C) -> atom_to_list(C);
                 C when is_binary(C) -> binary_to_list(C);
                 C -> C
             end,
    Ebin = filename:dirname(code:which(?MODULE)),
    PeerOpts = maps:remove(cookie, Merged#{args => ["-setcookie", Cookie, "-pa", Ebin
                                                    | maps:get(args, Merged)]}),
    case peer:start_link(PeerOpts) of
        {ok, Pid, Node} ->
            ct:log("started peer ~ts (~p)", [Node, Pid]),
            {ok, Pid, Node};
        {ok, Pid} ->
            {ok, Pid, undefined};
        {error, _} = Error ->
            Error
    end.

%% @doc The `config' of a C node with TLS distribution (see
%% {@link shardnode:start_node/1}): the certificate `Cert.pem' and key
%% `Cert.key' in the directory `Dir', trusting the CA `Dir/ca.pem', with
%% mutual verification (the default `tls_verify = peer'). Merge it into the
%% node's own config:
%%
%% ```
%% Tls = shardnode_ct:tls_config(CertDir, "node"),
%% {[A], Config1} = shardnode_ct:start_nodes(Config0, [#{config => Tls}]),
%% {[B], Config} = shardnode_ct:start_nodes(Config1, [#{config => Tls, join => [A]}]).
%% '''
-spec tls_config(file:filename(), string()) -> #{atom() => file:filename()}.
tls_config(Dir, Cert) ->
    #{tls_certfile => filename:join(Dir, Cert ++ ".pem"),
      tls_keyfile => filename:join(Dir, Cert ++ ".key"),
      tls_cacertfile => filename:join(Dir, "ca.pem")}.

%% @doc Starts a BEAM peer node with TLS distribution (`-proto_dist inet_tls
%% -ssl_dist_optfile F'), as a cluster that crosses machines runs it: its
%% certificate `Cert.pem' and key `Cert.key' from `Dir', trusting
%% `Dir/ca.pem', verifying its peers both ways (`verify_peer', and
%% `fail_if_no_peer_cert' as a server). The options, all but `certs'
%% optional:
%% <dl>
%% <dt>`certs'</dt><dd>the directory of the PEM files;</dd>
%% <dt>`cert'</dt><dd>the certificate's base name, default `"node"';</dd>
%% <dt>`ssl'</dt><dd>more ssl options for both sides, such as
%%     `{versions, [V]}' with `V' the atom for TLS 1.3;</dd>
%% <dt>`pa'</dt><dd>directories added to the peer's code path (the
%%     shardnode application's is always there), such as the suite's own,
%%     so that its helpers run there;</dd>
%% </dl>
%% and the options of {@link start_peer/2} (`name', `cookie', `args'). The
%% option file is written into `certs'.
%%
%% The test node normally speaks plain TCP, so it cannot reach a TLS peer
%% by distribution: the peer is driven over its standard input
%% (`connection => standard_io'), with `peer:call/4':
%%
%% ```
%% {ok, P, _} = shardnode_ct:start_tls_peer(Config, #{certs => CertDir}),
%% pong = peer:call(P, net_adm, ping, [CNode]).
%% '''
-spec start_tls_peer(config(), map()) -> {ok, pid(), node()} | {error, term()}.
start_tls_peer(Config, #{certs := Dir} = Opts) ->
    Cert = maps:get(cert, Opts, "node"),
    Extra = maps:get(ssl, Opts, []),
    Side = fun(Own) ->
                   [{certfile, filename:join(Dir, Cert ++ ".pem")}, {keyfile, filename:join(Dir, Cert ++ ".key")},
                    {cacertfile, filename:join(Dir, "ca.pem")}, {verify, verify_peer} | Own ++ Extra]
           end,
    OptFile = filename:join(Dir, unique_name(Cert) ++ ".ssl_dist_opts"),
    ok = file:write_file(OptFile, io_lib:format("~p.~n", [[{server, Side([{fail_if_no_peer_cert, true}])},
                                                            {client, Side([])}]])),
    Args = ["-proto_dist", "inet_tls", "-ssl_dist_optfile", OptFile]
        ++ lists:append([["-pa", D] || D <- maps:get(pa, Opts, [])])
        ++ maps:get(args, Opts, []),
    PeerOpts = maps:without([certs, cert, ssl, pa], Opts),
    start_peer(Config, PeerOpts#{connection => standard_io, args => Args}).

%% @doc Stops a peer started by {@link start_peer/2}; a peer already gone is
%% fine.
-spec stop_peer(pid()) -> ok.
stop_peer(Pid) ->
    try
        peer:stop(Pid)
    catch
        exit:_ -> ok
    end.

%%====================================================================
%% Internal functions
%%====================================================================

start_all([], Acc) ->
    lists:reverse(Acc);
start_all([Opts | Rest], Acc) ->
    Named = named(Opts),
    case shardnode:start_node(Named) of
        {ok, Node} ->
            ct:log("started C node ~ts", [Node]),
            start_all(Rest, [{Node, Named} | Acc]);
        {error, Reason} ->
            log_failure(Named, Reason),
            _ = [shardnode:stop_node(Node) || {Node, _} <- Acc],
            ct:fail({start_node_failed, node_opt(Named), summary(Reason)})
    end.

named(Opts) ->
    tracked(case Opts of
                #{name := _} -> Opts;
                #{sname := _} -> Opts;
                #{} -> Opts#{name => unique_name("c") ++ "@127.0.0.1"}
            end).

%% While instances are tracked, a node started by the kit reports them
%% (the test setting instance_reports_to), unless its options say where.
tracked(Opts) ->
    case shardnode_instances:reports_to() of
        undefined ->
            Opts;
        Node ->
            Config = maps:get(config, Opts, #{}),
            Opts#{config => maps:merge(#{instance_reports_to => Node}, Config)}
    end.

%% The node's name leads the test's failure reason (a summary one line
%% long, whole in a CI log); its options and output are logged here.
log_failure(Opts, Reason) ->
    ct:pal("C node ~0tp was started with ~0tp", [node_opt(Opts), maps:without([cookie], Opts)]),
    log_reason(Opts, Reason).

log_reason(Opts, {exited, Status, Lines}) ->
    ct:pal("C node ~0tp exited with status ~p before it answered; output:~n~ts",
           [node_opt(Opts), Status, [[L, $\n] || L <- Lines]]);
log_reason(Opts, {not_ready, Lines}) ->
    ct:pal("C node ~0tp did not answer in time; output:~n~ts",
           [node_opt(Opts), [[L, $\n] || L <- Lines]]);
log_reason(Opts, Reason) ->
    ct:pal("C node ~0tp did not start: ~0tp", [node_opt(Opts), Reason]).

summary({exited, Status, _Lines}) -> {exited, Status};
summary({not_ready, _Lines}) -> not_ready;
summary(Reason) -> Reason.

node_opt(#{name := Name}) -> Name;
node_opt(#{sname := Name}) -> Name.

stop_one(Node, Grace) ->
    log_output(Node),
    Stop = shardnode:stop_node(Node, Grace),
    Gone = shardnode_poll:until(fun() -> gone(Node) end, ?GONE_TIMEOUT),
    case {Stop, Gone} of
        {ok, ok} -> ok;
        %% killed by the test itself, or died: gone is what matters here
        {{error, not_found}, ok} -> ok;
        {_, timeout} -> {not_gone, Stop};
        {Error, ok} -> Error
    end.

%% A long-named node cannot talk to a short-named one (the other way round
%% neither); pinging one would only log an error about host names.
pingable(Node) ->
    [_, Host] = string:split(atom_to_list(Node), "@"),
    LongName = lists:member($., Host) orelse lists:member($:, Host),
    erlang:is_alive() andalso net_kernel:longnames() =:= LongName.

default_host(true) ->
    "127.0.0.1";
default_host(false) ->
    {ok, Host} = inet:gethostname(),
    hd(string:split(Host, ".")).

%% @doc A TCP port free on this host right now, for a node's `metrics_port'.
%% It is drawn at random below the kernel's ephemeral range (Linux's
%% ip_local_port_range; 32768 where it cannot be read), where no program
%% that listens on port 0 — a C node's distribution port, a peer — is
%% handed it before the node binds it; only another pick of the same port
%% in that moment could, which suites run side by side make unlikely.
-spec free_port() -> inet:port_number().
free_port() ->
    free_port(ephemeral_low(), 100).

free_port(Low, Tries) when Tries > 0 ->
    Port = 10000 + rand:uniform(max(Low - 10000, 1000)) - 1,
    case gen_tcp:listen(Port, [{reuseaddr, true}]) of
        {ok, L} ->
            ok = gen_tcp:close(L),
            Port;
        {error, _} ->
            free_port(Low, Tries - 1)
    end;
free_port(_Low, 0) ->
    {ok, L} = gen_tcp:listen(0, [{reuseaddr, true}]),
    {ok, Port} = inet:port(L),
    ok = gen_tcp:close(L),
    Port.

%% @doc `N' ports as {@link free_port/0} draws them, no two the same (one
%% draw can return a port another returned before any node bound it): one
%% for each node of a cluster started at once.
-spec free_ports(non_neg_integer()) -> [inet:port_number()].
free_ports(N) when is_integer(N), N >= 0 ->
    free_ports(N, []).

free_ports(0, Ports) ->
    Ports;
free_ports(N, Ports) ->
    Port = free_port(),
    case lists:member(Port, Ports) of
        true -> free_ports(N, Ports);
        false -> free_ports(N - 1, [Port | Ports])
    end.

%% The lowest port of the kernel's ephemeral range.
ephemeral_low() ->
    case file:read_file("/proc/sys/net/ipv4/ip_local_port_range") of
        {ok, Text} ->
            case string:lexemes(binary_to_list(Text), " \t\n") of
                [Low | _] -> list_to_integer(Low);
                [] -> 32768
            end;
        {error, _} ->
            32768
    end.

%% @doc The page a node's metrics endpoint on `Port' serves (`GET /metrics'
%% on 127.0.0.1), or `{error, Reason}'.
-spec metrics_page(inet:port_number()) -> {ok, binary()} | {error, term()}.
metrics_page(Port) ->
    metrics_page({127, 0, 0, 1}, Port).

%% @doc The same from a node at another address (one in a network
%% namespace of its own, say).
-spec metrics_page(inet:socket_address() | inet:hostname(), inet:port_number()) -> {ok, binary()} | {error, term()}.
metrics_page(Addr, Port) ->
    case gen_tcp:connect(Addr, Port, [binary, {active, false}], 5000) of
        {ok, S} ->
            ok = gen_tcp:send(S, <<"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n">>),
            Result = recv_page(S, <<>>),
            gen_tcp:close(S),
            Result;
        {error, _} = Error ->
            Error
    end.

recv_page(S, Acc) ->
    case gen_tcp:recv(S, 0, 5000) of
        {ok, More} -> recv_page(S, <<Acc/binary, More/binary>>);
        {error, closed} ->
            case binary:split(Acc, <<"\r\n\r\n">>) of
                [<<"HTTP/1.1 200", _/binary>>, Body] -> {ok, Body};
                _ -> {error, {bad_response, Acc}}
            end;
        {error, _} = Error -> Error
    end.

%% @doc The value of the sample named exactly `Series' (its name and
%% labels, as in `<<"shardnode_dist_connections{state=\"up\"}">>') on a
%% metrics page, or `undefined' if the page has none.
-spec metric_value(binary(), binary()) -> number() | undefined.
metric_value(Page, Series) ->
    Prefix = <<Series/binary, " ">>,
    case [L || L <- binary:split(Page, <<"\n">>, [global]),
               binary:longest_common_prefix([L, Prefix]) =:= byte_size(Prefix)] of
        [Line | _] ->
            V = binary:part(Line, byte_size(Prefix), byte_size(Line) - byte_size(Prefix)),
            try binary_to_integer(V) catch error:badarg -> binary_to_float(V) end;
        [] ->
            undefined
    end.
