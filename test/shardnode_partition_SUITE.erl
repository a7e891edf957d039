%% Real faults on real networks: five C nodes, each in a Linux network
%% namespace of its own, joined by a bridge this suite makes (10.78.0.0/24,
%% `snpt0'), with links cut and packets dropped by iptables inside the
%% namespaces. A stream of increments runs through every node during each
%% fault: an acknowledged value is the previous plus one, or 1 again after
%% the entity moved (a restart), never anything that would show two
%% instances of one entity. The stream increments the cluster singleton
%% boss too: a minority's proxy must never reach a second instance.
%%
%% The faults run twice: with states in memory, where an entity that
%% moves off a lost member restarts at 1, and in the group `replicated',
%% with `state_store = lmdb' and replicas (docs/contract.md, "Entity
%% state"), where no entity ever restarts: every acknowledged value goes
%% on from where it was (two replicas for the split that cuts two members
%% away at once, one otherwise).
%%
%% The group `watched_on_a_ring' runs the faults that need no replicas
%% with `watchers = 2': five members are then more than watchers + 1, so
%% each member watches two others on the ring and the two oldest grant
%% the leases (docs/contract.md, "A cluster's cost per member"), as in a
%% large cluster. A cut link there is reported by one end only (the one
%% that watches the other), so which end goes is not asserted.
%%
%% Needs root, iproute2 and iptables (`make deps' installs them). Where a
%% namespace cannot be made, every case is skipped, with the reason.
%%
%%   rebar3 ct --dir test --suite shardnode_partition_SUITE
-module(shardnode_partition_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-import(shardnode_ct, [member_status/2]).

-export([all/0, groups/0, suite/0, init_per_suite/1, end_per_suite/1,
         init_per_group/2, end_per_group/2,
         init_per_testcase/2, end_per_testcase/2]).
-export([five_nodes_join_at_once/1,
         one_cut_link_costs_one_member/1,
         one_lossy_member_costs_only_itself/1,
         a_stalled_link_reports_nobody/1,
         a_lossy_oldest_member_costs_only_itself/1,
         minority_downs_itself_majority_serves/1,
         oldest_member_isolated/1,
         killed_member_restarts/1]).

-define(BRIDGE, "snpt0").
-define(NET, "10.78.0.").
-define(N, 5).
-define(SHARDS, 30).
-define(IDS, 40).
-define(METRICS_PORT, 9464).

suite() -> [{timetrap, {minutes, 3}}].

all() ->
    [five_nodes_join_at_once | faults()] ++ [{group, replicated}, {group, watched_on_a_ring}].

groups() ->
    [{replicated, [], faults()},
     {watched_on_a_ring, [], [one_cut_link_costs_one_member,
                              minority_downs_itself_majority_serves,
                              oldest_member_isolated,
                              killed_member_restarts]}].

faults() ->
    [one_cut_link_costs_one_member,
     one_lossy_member_costs_only_itself,
     a_stalled_link_reports_nobody,
     a_lossy_oldest_member_costs_only_itself,
     minority_downs_itself_majority_serves,
     oldest_member_isolated,
     killed_member_restarts].

init_per_group(replicated, Config) ->
    [{replicas, 1} | Config];
init_per_group(watched_on_a_ring, Config) ->
    [{watchers, 2} | Config].

end_per_group(_Group, _Config) ->
    ok.

init_per_suite(Config) ->
    teardown_network(),
    case setup_network() of
        ok ->
            {ok, _} = application:ensure_all_started(shardnode),
            Config;
        {error, Why} ->
            teardown_network(),
            {skip, lists:flatten(io_lib:format("network namespaces cannot be made here: ~ts", [Why]))}
    end.

end_per_suite(_Config) ->
    teardown_network(),
    ?assertEqual([], [NS || NS <- namespaces(), lists:member(NS, string:lexemes(sh_out("ip netns list"), "\n "))]),
    ok.

%% Every case but the first starts with five members, n1 the oldest.
init_per_testcase(five_nodes_join_at_once, Config) ->
    Config;
init_per_testcase(Case, Config0) ->
    %% Two members cut away at once: with one replica a shard whose two
    %% copies were both there would wait for them (never start empty).
    %% Each case's nodes have data_dirs of their own.
    %% The same case runs in two groups, and priv_dir is the suite's.
    CaseDir = filename:join(?config(priv_dir, Config0),
                            atom_to_list(Case) ++ "_" ++ integer_to_list(erlang:unique_integer([positive]))),
    Config = case {Case, ?config(replicas, Config0)} of
                 {minority_downs_itself_majority_serves, 1} -> [{replicas, 2}, {case_dir, CaseDir} | Config0];
                 _ -> [{case_dir, CaseDir} | Config0]
             end,
    {[N1], Config1} = shardnode_ct:start_nodes(Config, [opts(1, Config)]),
    {Rest, Config2} = shardnode_ct:start_nodes(Config1, [(opts(I, Config))#{join => [N1]} || I <- lists:seq(2, ?N)]),
    Nodes = [N1 | Rest],
    await(fun() -> same_up_members(Nodes, Nodes) end),
    %% With replicas, the faults come once every shard has all its copies
    %% (n1 runs the coordinators): before that, a shard whose only other
    %% copy is still being filled has one copy, and waits if it is lost.
    ?config(replicas, Config) =:= undefined orelse
        await(fun() -> all_answer(Nodes) andalso
                           replicas_missing() =:= [0, 0] end),
    [{nodes, Nodes} | Config2].

end_per_testcase(_Case, Config) ->
    heal(),
    shardnode_ct:stop_all_nodes(Config),
    %% Whatever a node left in its namespace (epmd) goes too.
    [sh("ip netns pids " ++ NS ++ " | xargs -r kill -9") || NS <- namespaces()],
    ok.

%%====================================================================
%% Cases
%%====================================================================

%% A deployment starts five nodes at once, each in its own namespace, four
%% joining the first: every node comes to list the same five members, and
%% every entity answers through every node. Twice.
five_nodes_join_at_once(Config) ->
    [begin
         T0 = erlang:monotonic_time(millisecond),
         [First | _] = OptsList = [opts(I) || I <- lists:seq(1, ?N)],
         Seed = list_to_atom(maps:get(name, First)),
         {Nodes, _} = shardnode_ct:start_nodes_at_once(
                        Config, [First | [O#{join => [Seed]} || O <- tl(OptsList)]]),
         await(fun() -> same_up_members(Nodes, Nodes) end),
         await(fun() -> all_answer(Nodes) end),
         ct:log("round ~b: five nodes in namespaces serving ~b ms after the start",
                [Round, erlang:monotonic_time(millisecond) - T0]),
         shardnode_ct:stop_nodes(Config, Nodes)
     end || Round <- [1, 2]],
    ok.

%% The link between n1 and n3 alone is cut. Both still hear everyone else,
%% so only the leader decides: it downs one of the two (the younger, n3).
%% The other four keep serving, and after the cut heals nobody else is
%% lost.
one_cut_link_costs_one_member(Config) ->
    [N1, N2, N3, N4, N5] = Nodes = ?config(nodes, Config),
    Stream = start_stream(Nodes),
    cut(1, 3),
    %% Downed, then removed once it has gone: n3, the younger, where both
    %% ends report the other; on a ring, the end that reports.
    Gone = fun(N) -> lists:member(member_status(N2, N), [down, absent]) end,
    Downed = case ?config(watchers, Config) of
                 undefined -> await(fun() -> Gone(N3) end), N3;
                 _ -> await(fun() -> Gone(N1) orelse Gone(N3) end),
                      hd([N || N <- [N1, N3], Gone(N)])
             end,
    ?assertNot(lists:any(Gone, [N || N <- [N1, N3], N =/= Downed] ++ [N2, N4, N5]),
               "one end of the link goes, nobody else"),
    Survivors = Nodes -- [Downed],
    await(fun() -> not lists:member(Downed, shardnode:which_nodes()) end),
    heal(),
    assert_no_more_lost(Survivors),
    await(fun() -> all_answer(Survivors) end),
    assert_stream(Stream, Config).

%% n3 loses 30 % of its packets, both ways. It may be downed; no healthy
%% member ever is, and the healthy ones keep serving.
one_lossy_member_costs_only_itself(Config) ->
    [N1, N2, N3, N4, N5] = Nodes = ?config(nodes, Config),
    Healthy = [N1, N2, N4, N5],
    Stream = start_stream(Nodes),
    lossy(3, "0.3"),
    %% The fault lasts until n3 is downed, or 15 s at most.
    Outcome = shardnode_poll:until(fun() -> lists:member(member_status(N1, N3), [down, absent]) end, 15000),
    heal(),
    ct:log("n3 with 30 % loss: ~ts", [case Outcome of ok -> "downed"; timeout -> "kept for 15 s"
                                           end]),
    %% n3 may still go either way as the view settles; the healthy never.
    AllHealthyUp = fun() -> lists_up(Healthy, Healthy) end,
    await(AllHealthyUp),
    hold(AllHealthyUp, erlang:monotonic_time(millisecond) + 4000),
    await(fun() -> all_answer(Healthy) end),
    assert_stream(Stream, Config).

%% One link stalls: for 1.3 s nothing n1 sends n3 gets through, then it
%% does again, and TCP's retransmission brings what was held back about
%% 1.5 s after the stall began (one and a half failure_timeout_ms); all else
%% flows. n3 hears nothing of n1 meanwhile, but the members it asks about
%% n1 (indirect probes) hear it: n1 is never unreachable to n3, and nobody
%% is downed. Without the probes n3 showed n1 unreachable for about half a
%% second.
a_stalled_link_reports_nobody(Config) ->
    [N1, _N2, N3, _N4, _N5] = Nodes = ?config(nodes, Config),
    Stream = start_stream(Nodes),
    Watch = self(),
    Watcher = spawn_link(fun() ->
                                 Watch ! {seen, statuses_seen(N3, N1, erlang:monotonic_time(millisecond) + 5000, #{})}
                         end),
    stall(1, 3, 1300),
    Seen = receive {seen, S} -> S after 10000 -> ct:fail({no_statuses, Watcher}) end,
    ct:log("n1 as n3 saw it, polled every 50 ms for 5 s, n1's packets to n3 dropped for the first 1.3 s: ~p",
           [Seen]),
    ?assertEqual(#{up => maps:get(up, Seen, 0)}, Seen, "n1 was only ever up to n3"),
    hold(fun() -> lists_up(Nodes, Nodes) end, erlang:monotonic_time(millisecond) + 2000),
    await(fun() -> all_answer(Nodes) end),
    assert_stream(Stream, Config).

%% How often Observer showed each status of Node until Deadline, polled.
statuses_seen(Observer, Node, Deadline, Seen) ->
    case erlang:monotonic_time(millisecond) > Deadline of
        true -> Seen;
        false ->
            Status = member_status(Observer, Node),
            timer:sleep(50),
            statuses_seen(Observer, Node, Deadline, maps:update_with(Status, fun(C) -> C + 1 end, 1, Seen))
    end.

%% The same with the loss on n1, the oldest: the leader, which decides on
%% the indirect faults. Its own loss makes it miss the others' heartbeats
%% while they hear it: it must not down the members it cannot hear (it
%% did, in one run in two), but go itself or keep everyone.
a_lossy_oldest_member_costs_only_itself(Config) ->
    [N1, N2, N3, N4, N5] = Nodes = ?config(nodes, Config),
    Healthy = [N2, N3, N4, N5],
    Stream = start_stream(Nodes),
    lossy(1, "0.3"),
    Outcome = shardnode_poll:until(fun() -> lists:member(member_status(N2, N1), [down, absent]) end, 15000),
    NotUp = [N || N <- Healthy, member_status(N2, N) =/= up],
    heal(),
    ct:log("n1 with 30 % loss: ~ts; healthy members not up then: ~p",
           [case Outcome of ok -> "downed"; timeout -> "kept for 15 s" end, NotUp]),
    ?assertEqual([], NotUp),
    AllHealthyUp = fun() -> lists_up(Healthy, Healthy) end,
    await(AllHealthyUp),
    hold(AllHealthyUp, erlang:monotonic_time(millisecond) + 4000),
    await(fun() -> all_answer(Healthy) end),
    assert_stream(Stream, Config).

%% Every node of `At' lists every member of `Members' as up.
lists_up(At, Members) ->
    lists:all(fun(N) ->
                      case catch gen_server:call({shardnode, N}, members, 2000) of
                          {ok, Ms} -> Members -- [M || #{node := M, status := up} <- Ms] =:= [];
                          _ -> false
                      end
              end, At).

%% {n1, n2} | {n3, n4, n5}: the two down themselves and exit, the three
%% down them and serve every entity.
minority_downs_itself_majority_serves(Config) ->
    [N1, N2, N3, N4, N5] = Nodes = ?config(nodes, Config),
    Stream = start_stream(Nodes),
    [cut(A, B) || A <- [1, 2], B <- [3, 4, 5]],
    await(fun() -> [] =:= [N || N <- [N1, N2], lists:member(N, shardnode:which_nodes())] end),
    Majority = [N3, N4, N5],
    await(fun() -> same_up_members(Majority, Majority) end),
    heal(),
    await(fun() -> all_answer(Majority) end),
    assert_stream(Stream, Config).

%% n1, the oldest (it runs every coordinator and the singleton), is cut
%% from everyone. It downs itself; the others down it, and n2 takes the
%% coordinators and the singleton over.
oldest_member_isolated(Config) ->
    [N1, N2 | _] = Nodes = ?config(nodes, Config),
    Stream = start_stream(Nodes),
    [cut(1, B) || B <- lists:seq(2, ?N)],
    await(fun() -> not lists:member(N1, shardnode:which_nodes()) end),
    Rest = tl(Nodes),
    await(fun() -> same_up_members(Rest, Rest) end),
    ?assertEqual({ok, N2}, gen_server:call({shardnode, N2}, {coordinator, counter})),
    ?assertEqual({ok, N2}, gen_server:call({shardnode, lists:last(Nodes)}, {singleton, boss})),
    heal(),
    await(fun() -> all_answer(Rest) end),
    assert_stream(Stream, Config).

%% kill -9 of n5: it is downed, its shards go elsewhere; it comes back under
%% its name and serves again.
killed_member_restarts(Config) ->
    [N1 | _] = Nodes = ?config(nodes, Config),
    N5 = lists:last(Nodes),
    Stream = start_stream(Nodes),
    ok = shardnode:kill_node(N5),
    await(fun() -> lists:member(member_status(N1, N5), [down, absent]) end),
    await(fun() -> all_answer(lists:droplast(Nodes)) end),
    {[N5], _} = shardnode_ct:start_nodes(Config, [(opts(?N, Config))#{join => [N1]}]),
    await(fun() -> same_up_members(Nodes, Nodes) end),
    await(fun() -> all_answer(Nodes) end),
    assert_stream(Stream, Config),
    ok = shardnode:stop_node(N5).

%%====================================================================
%% The stream of increments
%%====================================================================

%% Increments ?IDS counters and the singleton through each node in turn, one call at a time,
%% and tallies the answers: ok (previous + 1), restart (1 again: the entity
%% moved), lost_ack (higher than previous + 1: a call that timed out was
%% applied), restart_lost_ack (not higher, after a timed-out call: it
%% restarted and took that call), timeout, nodedown (the node went while the
%% call waited: maybe applied), error (refused at once), {error, Reason}
%% (refused, not applied), and bad (the same value again, or lower with no
%% call lost: two instances). The singleton's values are kept as they came.
start_stream(Nodes) ->
    Self = self(),
    spawn_link(fun() -> stream(Self, Nodes, 0, #{}, #{}) end).

stream(Owner, Nodes, K, Last, Tally) ->
    receive
        {stop, From} -> From ! {tally, Tally};
        {boss_answers, From} ->
            From ! {boss_answers, length(maps:get(boss_values, Tally, []))},
            stream(Owner, Nodes, K, Last, Tally)
    after 0 ->
        Node = lists:nth(1 + K rem length(Nodes), Nodes),
        %% Each counter through one node (40 ids, 5 nodes), so a call that
        %% timed out cannot be applied after a later one through another
        %% node; every 8th step the singleton, through each node in turn.
        {Id, Dest, Msg} = case K rem 8 of
                              7 -> {boss, boss, incr};
                              _ -> {K rem ?IDS, counter, {K rem ?IDS, incr}}
                          end,
        {Prev, Lost} = maps:get(Id, Last, {0, false}),
        try gen_server:call({Dest, Node}, Msg, 1000) of
            {error, unconfirmed} = Unknown when Id =/= boss ->
                %% handled, its write not confirmed as the node stopped:
                %% maybe applied, as after a timeout
                stream(Owner, Nodes, K + 1, Last#{Id => {Prev, true}}, bump(Unknown, Tally));
            {error, _} = Refused ->
                %% {error, shutting_down}: held for a lease, then refused
                %% as the node stopped. Not applied.
                stream(Owner, Nodes, K + 1, Last, bump(Refused, Tally));
            V when Id =:= boss ->
                %% One entity reached through every node: a call that failed
                %% through one may be applied late, after later calls through
                %% others, so values may skip. Kept in order and judged
                %% whole by assert_stream.
                Values = maps:get(boss_values, Tally, []),
                stream(Owner, Nodes, K + 1, Last, Tally#{boss_values => [V | Values]});
            V ->
                Kind = if V =:= Prev + 1 -> ok;
                          V =:= 1 -> restart;
                          V > Prev + 1, Lost -> lost_ack;
                          %% restarted, then took the lost call(s)
                          V =< Prev, Lost -> restart_lost_ack;
                          true -> {bad, Id, Prev, V}
                       end,
                stream(Owner, Nodes, K + 1, Last#{Id => {V, false}}, bump(Kind, Tally))
        catch
            exit:{timeout, _} ->
                stream(Owner, Nodes, K + 1, Last#{Id => {Prev, true}}, bump(timeout, Tally));
            exit:{{nodedown, _}, _} ->
                %% The node went while the call waited: it may have been
                %% applied there before.
                stream(Owner, Nodes, K + 1, Last#{Id => {Prev, true}}, bump(nodedown, Tally));
            exit:_ ->
                %% A call that failed at once never reached an entity.
                stream(Owner, Nodes, K + 1, Last, bump(error, Tally))
        end
    end.

bump(Kind, Tally) -> maps:update_with(Kind, fun(X) -> X + 1 end, 1, Tally).

assert_stream(Stream, Config) ->
    %% The singleton answers the stream again before it stops: a case
    %% whose faults and healing take less than the stream's timeouts
    %% would otherwise judge a stream with no call to it after the fault.
    await(fun() -> Stream ! {boss_answers, self()},
                   receive {boss_answers, N} -> N > 0 after 5000 -> false end
          end),
    unlink(Stream),
    Stream ! {stop, self()},
    Tally = receive {tally, T} -> T after 10000 -> ct:fail(stream_did_not_stop) end,
    Boss = lists:reverse(maps:get(boss_values, Tally, [])),
    Drops = [{A, B} || length(Boss) > 1, {A, B} <- lists:zip(lists:droplast(Boss), tl(Boss)), B =< A],
    ct:log("stream: ~p~nsingleton: ~b answers, went back at ~w", [maps:remove(boss_values, Tally),
                                                               length(Boss), Drops]),
    ?assertEqual([], [K || {bad, _, _, _} = K <- maps:keys(Tally)]),
    ?assert(maps:get(ok, Tally, 0) > 0),
    %% The singleton's values only go up, but for one restart where its
    %% member was lost: two instances answering would go back and forth.
    ?assert(length(Boss) > 0),
    ?assert(length(Drops) =< 1, {singleton_went_back, Drops, Boss}),
    case ?config(replicas, Config) of
        undefined ->
            ok;
        _ ->
            %% With replicas nothing acknowledged is lost: no counter and
            %% not the singleton starts again from nothing.
            ?assertEqual({0, 0, []}, {maps:get(restart, Tally, 0), maps:get(restart_lost_ack, Tally, 0), Drops})
    end,
    ok.

%%====================================================================
%% Helpers
%%====================================================================

%% On n1, where the coordinators run: the replicas the shards of counter
%% and boss lack.
replicas_missing() ->
    case shardnode_ct:metrics_page(addr(1), ?METRICS_PORT) of
        {ok, Page} ->
            [shardnode_ct:metric_value(Page, <<"shardnode_shard_replicas_missing{type=\"", T/binary, "\"}">>)
             || T <- [<<"counter">>, <<"boss">>]];
        {error, _} ->
            unknown
    end.

%% With {replicas, R} in Config, the states in LMDB (a data_dir per node)
%% with R replicas per shard.
%% Each case's nodes have a data_dir of their own, also on the memory store
%% (it holds the members file): with the default one, in the run's working
%% directory, a case's nodes remembered the members of the case before and
%% started as members started again, not as the fresh cluster it means.
opts(I, Config) ->
    Base = opts(I),
    Dir = filename:join(?config(case_dir, Config), ns(I)),
    Own = maps:merge((maps:get(config, Base))#{data_dir => Dir},
                     case ?config(watchers, Config) of
                         undefined -> #{};
                         W -> #{watchers => W}
                     end),
    case ?config(replicas, Config) of
        undefined ->
            Base#{config => Own};
        R ->
            Base#{config => Own#{state_store => lmdb, state_replicas => R, metrics_port => ?METRICS_PORT}}
    end.

opts(I) ->
    #{name => name(I), netns => ns(I), singletons => [{boss, counter}],
      config => #{number_of_shards => ?SHARDS, heartbeat_interval_ms => 200,
                  failure_timeout_ms => 1000, stable_after_ms => 2000,
                  retry_interval_ms => 500, rebalance_interval_ms => 300}}.

name(I) -> "n" ++ integer_to_list(I) ++ "@" ++ addr(I).

addr(I) -> ?NET ++ integer_to_list(I).

ns(I) -> "snpt" ++ integer_to_list(I).

namespaces() -> [ns(I) || I <- lists:seq(1, ?N)].

%% A bridge with this node's address on it (.254), and per node a
%% namespace joined to it by a veth pair (sn_netns), whose iptables works.
setup_network() ->
    sn_netns:setup(?BRIDGE, ?NET, [{ns(I), addr(I)} || I <- lists:seq(1, ?N)],
                   fun(NS) -> ["ip netns exec " ++ NS ++ " iptables -L -n"] end).

teardown_network() ->
    sn_netns:teardown(?BRIDGE, namespaces()).

%% Cuts the link between nodes A and B, inside A's namespace, both ways.
cut(A, B) ->
    ok = sh(iptables(A, "-A INPUT -s " ++ addr(B) ++ " -j DROP")),
    ok = sh(iptables(A, "-A OUTPUT -d " ++ addr(B) ++ " -j DROP")).

%% Drops a share of node I's packets to and from the other nodes (not this
%% node's: the stream is the observer).
lossy(I, Probability) ->
    ok = sh(iptables(I, "-A INPUT -s " ?NET "254 -j ACCEPT")),
    ok = sh(iptables(I, "-A OUTPUT -d " ?NET "254 -j ACCEPT")),
    [ok = sh(iptables(I, "-A " ++ Chain ++ " -m statistic --mode random --probability "
                      ++ Probability ++ " -j DROP")) || Chain <- ["INPUT", "OUTPUT"]],
    ok.

%% Drops every packet node A sends node B for Ms, inside A's namespace,
%% then lets them through again.
stall(A, B, Ms) ->
    Rule = "OUTPUT -d " ++ addr(B) ++ " -j DROP",
    ok = sh(iptables(A, "-I " ++ Rule)),
    timer:sleep(Ms),
    ok = sh(iptables(A, "-D " ++ Rule)).

heal() ->
    [sh(iptables(I, "-F")) || I <- lists:seq(1, ?N)],
    ok.

iptables(I, Rule) -> "ip netns exec " ++ ns(I) ++ " iptables " ++ Rule.

sh(Cmd) -> sn_netns:sh(Cmd).

sh_out(Cmd) -> os:cmd(Cmd).

%% After a decision, a settling time of two stable_after_ms periods costs
%% no further member: every node of `Nodes' still lists them all up.
assert_no_more_lost(Nodes) ->
    Deadline = erlang:monotonic_time(millisecond) + 4000,
    Check = fun() -> same_up_members(Nodes, Nodes) end,
    await(Check),
    hold(Check, Deadline).

hold(Check, Deadline) ->
    case erlang:monotonic_time(millisecond) > Deadline of
        true -> ok;
        false ->
            ?assert(Check()),
            timer:sleep(200),
            hold(Check, Deadline)
    end.

same_up_members(At, Expected) -> sn_netns:same_up_members(At, Expected).

%% Every entity answers through every node of `Nodes' (stops at the first
%% that does not).
all_answer(Nodes) ->
    lists:all(fun(N) ->
                      lists:all(fun(I) ->
                                        is_integer(catch gen_server:call({counter, N}, {I, get}, 1000))
                                end, lists:seq(0, ?IDS - 1))
                          andalso is_integer(catch gen_server:call({boss, N}, get, 1000))
              end, Nodes).

await(Fun) -> sn_test:await(Fun, 30000).

