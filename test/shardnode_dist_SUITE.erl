%% The C node as a member of an Erlang cluster: it answers pings and calls
%% the way a BEAM node does, with long and short names, as acceptor and as
%% initiator, keeps connections alive with ticks, refuses wrong cookies, and
%% survives whatever a peer sends it.
%%
%% Every case runs against the real executable, priv/shardnode. The cases in
%% group `shared_node' use one node started for the group; the cases in
%% group `own_node' get a fresh node each, because they kill it, feed it
%% garbage or need it configured differently. Every node is stopped at the
%% end and proven gone: exit status 0 after SIGTERM, not in epmd, `pang'.
%%
%%   rebar3 ct --dir test --suite shardnode_dist_SUITE
-module(shardnode_dist_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").
-include_lib("kernel/include/dist.hrl").

-export([all/0, groups/0, suite/0,
         init_per_suite/1, end_per_suite/1,
         init_per_group/2, end_per_group/2,
         init_per_testcase/2, end_per_testcase/2]).

-export([ping_long_name/1,
         owner_crash_stops_the_node/1,
         ping_short_name/1,
         admin_shard_types/1,
         admin_members/1,
         admin_bad_request/1,
         call_tag_echo/1,
         late_replies_are_dropped/1,
         impostor_cluster_messages_ignored/1,
         tell_to_admin_ignored/1,
         unknown_name_noproc/1,
         monitor_noconnection/1,
         wrong_cookie_refused/1,
         tick_keepalive/1,
         garbage_input_survived/1,
         oversized_message/1,
         c_node_initiates/1,
         simultaneous_connects_settle/1,
         a_peer_echoing_ticks_makes_no_storm/1,
         leave_exits_cleanly/1,
         bad_config_refused/1]).

%% The flags of a hidden OTP 25 node that supports monitors by name: what
%% the hand-made connections of this suite advertise.
-define(PROBE_FLAGS, (?MANDATORY_DFLAGS_25 bor ?DFLAG_MANDATORY_25_DIGEST
                      bor ?DFLAG_UNLINK_ID bor ?DFLAG_V4_NC
                      bor ?DFLAG_DIST_MONITOR bor ?DFLAG_DIST_MONITOR_NAME)).
-define(PROBE_CREATION, 16#5a5a0001).
%% distribution packet types (erl_dist_protocol)
-define(PASS_THROUGH, 112).
-define(REG_SEND, 6).

%%====================================================================
%% Setup
%%====================================================================

suite() ->
    [{timetrap, {minutes, 2}}].

all() ->
    [{group, shared_node},
     {group, own_node},
     bad_config_refused,
     owner_crash_stops_the_node].

groups() ->
    [{shared_node, [],
      [ping_long_name,
       admin_shard_types,
       admin_members,
       admin_bad_request,
       call_tag_echo,
       late_replies_are_dropped,
       impostor_cluster_messages_ignored,
       tell_to_admin_ignored,
       unknown_name_noproc,
       c_node_initiates,
       tick_keepalive]},
     {own_node, [],
      [ping_short_name,
       monitor_noconnection,
       wrong_cookie_refused,
       garbage_input_survived,
       oversized_message,
       simultaneous_connects_settle,
       a_peer_echoing_ticks_makes_no_storm,
       leave_exits_cleanly]}].

init_per_suite(Config) ->
    case {erlang:is_alive(), shardnode_args:command(#{name => "probe@127.0.0.1"})} of
        {false, _} ->
            {fail, "the test node is not distributed; run the suite with "
                   "`rebar3 ct --dir test` (rebar.config sets dist_node)"};
        {true, {error, {executable_not_found, Tried}}} ->
            {fail, lists:flatten(io_lib:format("no shardnode executable (run `make` first); "
                                               "looked for ~p", [Tried]))};
        {true, {ok, _}} ->
            {ok, _} = application:ensure_all_started(shardnode),
            Config
    end.

end_per_suite(_Config) ->
    ?assertEqual([], shardnode:which_nodes()),
    ok.

init_per_group(shared_node, Config) ->
    {[CNode], Config1} = shardnode_ct:start_nodes(Config, [#{}]),
    [{cnode, CNode} | Config1];
init_per_group(_Group, Config) ->
    Config.

end_per_group(shared_node, Config) ->
    %% a clean exit here also proves the node survived every case
    shardnode_ct:stop_nodes(Config);
end_per_group(_Group, _Config) ->
    ok.

init_per_testcase(Case, Config) ->
    case own_node(Case) of
        none ->
            Config;
        Opts ->
            {[CNode], Config1} = shardnode_ct:start_nodes(Config, [Opts]),
            [{cnode, CNode}, {cnode_opts, Opts} | Config1]
    end.

end_per_testcase(Case, Config) ->
    case own_node(Case) of
        none ->
            ok;
        _ ->
            try
                shardnode_ct:stop_nodes(Config)
            catch
                exit:{test_case_failed, Reason} -> {fail, Reason}
            end
    end.

%% The node a case in group own_node gets, started in init_per_testcase.
own_node(ping_short_name) -> #{sname => shardnode_ct:unique_name("c")};
own_node(oversized_message) -> #{config => #{max_message_bytes => 1048576}};
own_node(monitor_noconnection) -> #{};
own_node(wrong_cookie_refused) -> #{};
own_node(garbage_input_survived) -> #{};
own_node(simultaneous_connects_settle) -> #{config => #{metrics_port => shardnode_ct:free_port()}};
own_node(leave_exits_cleanly) -> #{};
own_node(a_peer_echoing_ticks_makes_no_storm) ->
    #{config => #{metrics_port => shardnode_ct:free_port(), net_ticktime => 1}};
own_node(_) -> none.

%%====================================================================
%% Cases
%%====================================================================

%% net_adm:ping/1 gets pong from a C node with a long name, and the C node
%% is hidden: it is connected, but not in nodes().
ping_long_name(Config) ->
    CNode = ?config(cnode, Config),
    ?assertEqual(pong, net_adm:ping(CNode)),
    ?assert(lists:member(CNode, nodes(hidden))),
    ?assertNot(lists:member(CNode, nodes())).

%% A C node with a short name (--sname) answers a BEAM node with a short
%% name. The test node has a long name and cannot talk to it; a peer with a
%% short name, driven over its standard input, does the talking.
ping_short_name(Config) ->
    CNode = ?config(cnode, Config),
    {ok, Host} = inet:gethostname(),
    ?assertEqual(hd(string:split(Host, ".")), host(CNode)),
    with_peer(Config, #{longnames => false, connection => standard_io},
              fun(Peer) ->
                      ?assertEqual(pong, peer:call(Peer, net_adm, ping, [CNode])),
                      ?assertMatch({ok, [_ | _]},
                                   peer:call(Peer, gen_server, call,
                                             [{shardnode, CNode}, shard_types, 5000]))
              end).

%% The admin lists the entity types the node hosts: by default the three
%% built-in ones.
admin_shard_types(Config) ->
    CNode = ?config(cnode, Config),
    {ok, Types} = gen_server:call({shardnode, CNode}, shard_types),
    ?assertEqual([counter, echo, kv], lists:sort(Types)).

%% A node started without seeds is a cluster of one, and soon its only
%% member is up.
admin_members(Config) ->
    CNode = ?config(cnode, Config),
    LoneMemberUp = fun() ->
                           case gen_server:call({shardnode, CNode}, members) of
                               {ok, [#{node := CNode, status := up}]} -> true;
                               _ -> false
                           end
                   end,
    wait_for(lone_member_up, LoneMemberUp, 5000),
    ?assertMatch({ok, [#{node := CNode, status := up}]},
                 gen_server:call({shardnode, CNode}, members)).

%% Every call gets a reply; a request the admin does not know gets
%% {error, {bad_request, Req}}.
admin_bad_request(Config) ->
    CNode = ?config(cnode, Config),
    ?assertEqual({error, {bad_request, {nonsense, 1}}},
                 gen_server:call({shardnode, CNode}, {nonsense, 1})),
    Bad = [nonsense, {coordinator}, {coordinator, counter, extra}, <<"members">>,
           [members], 42, #{members => true}],
    [?assertEqual({error, {bad_request, Req}}, gen_server:call({shardnode, CNode}, Req))
     || Req <- Bad].

%% The reply to a '$gen_call' carries the caller's tag exactly as it was
%% sent: a plain reference (OTP 23 and older) and [alias | Ref] (OTP 24 and
%% newer) alike.
call_tag_echo(Config) ->
    CNode = ?config(cnode, Config),
    %% An [alias | Ref] tag's reply goes to the alias, as a BEAM server's
    %% does: Ref must be an active alias for it to arrive.
    Alias = alias(),
    Tags = [make_ref(), [alias | Alias]],
    lists:foreach(
      fun(Tag) ->
              {shardnode, CNode} ! {'$gen_call', {self(), Tag}, shard_types},
              receive
                  {Tag, Reply} -> ?assertMatch({ok, [_ | _]}, Reply)
              after 5000 ->
                      ct:fail({no_reply_with_tag, Tag, flush()})
              end
      end, Tags),
    unalias(Alias).

%% Calls that time out at once (timeout 0), to the admin and to a region:
%% their replies come after the callers gave up, and the caller's runtime
%% drops them (they go to the call's alias, no longer active), as it does a
%% BEAM server's. The next call's reply, sent after all of them on the same
%% connection, finds the mailbox empty.
late_replies_are_dropped(Config) ->
    CNode = ?config(cnode, Config),
    Late = [catch gen_server:call({shardnode, CNode}, shard_types, 0) || _ <- lists:seq(1, 20)]
        ++ [catch gen_server:call({echo, CNode}, {I, hello}, 0) || I <- lists:seq(1, 20)],
    ct:log("~b of 40 calls timed out", [length([T || {'EXIT', {timeout, _}} = T <- Late])]),
    ?assertMatch({ok, [_ | _]}, gen_server:call({shardnode, CNode}, shard_types)),
    _ = gen_server:call({echo, CNode}, {21, hello}),
    ?assertEqual([], flush()).

%% Cluster messages count only from the node they name as their sender:
%% anyone with the cookie could otherwise rewrite the member list. Joins,
%% gossip and a heartbeat that name another node — one a name too long for
%% a node name (129 two-byte characters) — are ignored and logged: the
%% member list is as it was, and well-formed.
impostor_cluster_messages_ignored(Config) ->
    CNode = ?config(cnode, Config),
    {ok, Before} = gen_server:call({shardnode, CNode}, members),
    Long = binary_to_atom(iolist_to_binary([[<<"\x{e9}"/utf8>> || _ <- lists:seq(1, 129)], <<"@h">>])),
    Fake = 'impostor@127.0.0.1',
    Msgs = [{'$shardnode', join, Fake, [counter]},
            {'$shardnode', join, Long, [counter]},
            {'$shardnode', gossip, Fake, [{Fake, 1, up, 1, [counter]}]},
            {'$shardnode', gossip, Long, [{Long, 1, up, 1, [counter]}]},
            {'$shardnode', heartbeat, Fake, 1}],
    [{shardnode, CNode} ! M || M <- Msgs],
    ?assertEqual({ok, Before}, gen_server:call({shardnode, CNode}, members)),
    %% The node's log reaches its output through the port a moment later
    %% than its answer to the call above: polled, with a deadline.
    ok = sn_test:await(
           fun() ->
                   {ok, Lines} = shardnode:output(CNode),
                   lists:any(fun(L) ->
                                     binary:match(L, <<"naming impostor@127.0.0.1 as its sender ignored">>) =/= nomatch
                             end, Lines)
           end).

%% Messages to the admin that are not calls, or are malformed calls, are
%% ignored: no reply, no crash, and the next call is answered.
tell_to_admin_ignored(Config) ->
    CNode = ?config(cnode, Config),
    Junk = [garbage,
            {'$gen_call', not_a_from, shard_types},
            {'$gen_call', {self()}, shard_types},
            {'$gen_call'},
            {'$gen_cast', members},
            <<"binary">>,
            {self(), make_ref(), fun erlang:node/0, fun() -> CNode end},
            [1.5, 1 bsl 300, -(1 bsl 70), #{a => [b | c]}, {}, [], <<1:3>>],
            lists:foldl(fun(_, Acc) -> [Acc] end, [], lists:seq(1, 1000))],
    [{shardnode, CNode} ! Msg || Msg <- Junk],
    ?assertMatch({ok, [_ | _]}, gen_server:call({shardnode, CNode}, shard_types)),
    %% the call's reply came after anything the junk could have caused
    ?assertEqual([], flush()).

%% A call to a name nobody registered fails with noproc at once, not by
%% timeout: the C node answers the call's monitor with noproc. A plain
%% monitor on such a name gets 'DOWN' with noproc just as fast.
unknown_name_noproc(Config) ->
    CNode = ?config(cnode, Config),
    pong = net_adm:ping(CNode),
    T0 = erlang:monotonic_time(millisecond),
    Result = (catch gen_server:call({no_such_name, CNode}, x, 30000)),
    Elapsed = erlang:monotonic_time(millisecond) - T0,
    ?assertMatch({'EXIT', {noproc, _}}, Result),
    ?assert(Elapsed < 2000),
    Ref = erlang:monitor(process, {no_such_name, CNode}),
    receive
        {'DOWN', Ref, process, {no_such_name, CNode}, Reason} ->
            ?assertEqual(noproc, Reason)
    after 2000 ->
            ct:fail(no_down_for_unknown_name)
    end.

%% A monitor on a registered name of the C node fires with noconnection
%% when the node dies.
monitor_noconnection(Config) ->
    CNode = ?config(cnode, Config),
    pong = net_adm:ping(CNode),
    Ref = erlang:monitor(process, {shardnode, CNode}),
    %% a round trip after the monitor: a wrong 'DOWN' would be here by now
    {ok, _} = gen_server:call({shardnode, CNode}, shard_types),
    receive {'DOWN', Ref, _, _, Early} -> ct:fail({down_too_early, Early})
    after 0 -> ok
    end,
    T0 = erlang:monotonic_time(millisecond),
    ok = shardnode:kill_node(CNode),
    Left = max(0, 5000 - (erlang:monotonic_time(millisecond) - T0)),
    receive
        {'DOWN', Ref, process, {shardnode, CNode}, Reason} ->
            ?assertEqual(noconnection, Reason)
    after Left ->
            ct:fail(no_down_after_kill)
    end.

%% A node with another cookie is refused (its ping gets pang), the refusal
%% is logged with the word "cookie", and the node carries on.
wrong_cookie_refused(Config) ->
    CNode = ?config(cnode, Config),
    {ok, Before} = shardnode:output(CNode),
    with_peer(Config, #{cookie => "not_the_cookie", connection => standard_io},
              fun(Peer) ->
                      ?assertEqual(pang, peer:call(Peer, net_adm, ping, [CNode]))
              end),
    ?assertEqual(pong, net_adm:ping(CNode)),
    ?assertMatch({ok, [_ | _]}, gen_server:call({shardnode, CNode}, shard_types)),
    MentionsCookie = fun() ->
                             {ok, After} = shardnode:output(CNode),
                             lists:any(fun(Line) -> mentions(Line, "cookie") end,
                                       new_lines(Before, After))
                     end,
    wait_for(refusal_logged, MentionsCookie, 5000).

%% With net_ticktime 4, a BEAM node drops a connection on which it has
%% heard nothing for about 4 seconds. The C node keeps an idle connection
%% alive: the same connection is up after four tick times and more.
%% (Waiting is the test here, so this case waits, checking every second.)
tick_keepalive(Config) ->
    CNode = ?config(cnode, Config),
    with_peer(Config, #{connection => standard_io,
                        args => ["-kernel", "net_ticktime", "4"]},
              fun(Peer) ->
                      ?assertEqual(pong, peer:call(Peer, net_adm, ping, [CNode])),
                      [Conn] = connections(Peer, CNode),
                      lists:foreach(
                        fun(Second) ->
                                timer:sleep(1000),
                                case connections(Peer, CNode) of
                                    [Conn] -> ok;
                                    Other -> ct:fail({connection_lost, Second, Other})
                                end
                        end, lists:seq(1, 4 * 4 + 2)),
                      ?assertMatch({ok, [_ | _]},
                                   peer:call(Peer, gen_server, call,
                                             [{shardnode, CNode}, shard_types, 5000])),
                      ?assertEqual([Conn], connections(Peer, CNode))
              end).

%% Nothing a peer sends crashes the node: random bytes, absurd lengths,
%% truncated and malformed handshakes, wrong digests, garbage after a good
%% handshake, a flood of connections. After each, the node answers pings
%% and calls on the existing connection, and completes a new handshake.
garbage_input_survived(Config) ->
    CNode = ?config(cnode, Config),
    Port = dist_port(CNode),
    Attacks =
        [{random_bytes, fun() -> poke(Port, rand:bytes(4096)) end},
         {huge_handshake_length, fun() -> poke(Port, <<16#ffff:16, $N, 1, 2, 3>>) end},
         {truncated_send_name, fun() -> poke(Port, <<0, 30, $N, 0, 0, 0>>) end},
         {old_send_name, fun() -> poke(Port, old_send_name(<<"old@127.0.0.1">>)) end},
         {bogus_node_names, fun() -> [poke(Port, send_name(Name)) || Name <- bogus_names()] end},
         {handshake_abandoned, fun() -> abandon_handshake(Port) end},
         {wrong_digest, fun() -> wrong_digest(Port) end},
         {huge_packet_length, fun() -> huge_packet(Port) end},
         {garbage_after_handshake, fun() -> garbage_packets(Port) end},
         {connection_flood, fun() -> flood(Port, 200) end}],
    lists:foreach(fun({What, Attack}) ->
                          ct:log("attack: ~p", [What]),
                          Attack(),
                          assert_alive(CNode, Port, What)
                  end, Attacks).

%% A message bigger than max_message_bytes (1 MB here) is read past and
%% discarded; the connection stays up, so nothing else on this node sees a
%% nodedown. A 2 MB call gets {error, message_too_large}, at once (its
%% sender and tag come before the payload), from the admin and from a
%% region; a 2 MB plain message is dropped. Another process's
%% calls meanwhile are answered, and the next calls too.
oversized_message(Config) ->
    CNode = ?config(cnode, Config),
    pong = net_adm:ping(CNode),
    {ok, OsPid} = shardnode:os_pid(CNode),
    ok = net_kernel:monitor_nodes(true),
    Big = binary:copy(<<7>>, 2 * 1024 * 1024),
    Self = self(),
    Other = spawn_link(fun() ->
                               Answers = [gen_server:call({echo, CNode}, {I, hi}) || I <- lists:seq(1, 200)],
                               Self ! {other, Answers}
                       end),
    {shardnode, CNode} ! Big,
    ?assertEqual({error, message_too_large}, gen_server:call({shardnode, CNode}, {Big}, 10000)),
    ?assertEqual({error, message_too_large}, gen_server:call({counter, CNode}, {1, {Big}}, 10000)),
    receive {other, Answers} -> ?assertEqual(200, length(Answers)) after 30000 -> ct:fail({other_caller_stuck, Other}) end,
    ?assertMatch({ok, [_ | _]}, gen_server:call({shardnode, CNode}, shard_types, 2000)),
    ?assertEqual(0, gen_server:call({counter, CNode}, {1, get})),
    ?assertEqual(pong, net_adm:ping(CNode)),
    ?assertEqual([], [M || {nodedown, _} = M <- flush()], "the connection stayed up"),
    ok = net_kernel:monitor_nodes(false),
    ?assertEqual({ok, OsPid}, shardnode:os_pid(CNode)).

%% The C node opens connections too: a call whose reply must go to a
%% process on a node the C node is not connected to makes it connect to
%% that node (epmd lookup, handshake as initiator) and deliver the reply.
c_node_initiates(Config) ->
    CNode = ?config(cnode, Config),
    with_peer(Config, #{connection => standard_io},
              fun(Peer) ->
                      ?assertEqual([], connections(Peer, CNode)),
                      %% a process on the peer that keeps whatever it receives
                      Inbox = spawn_inbox(Peer),
                      Tag = make_ref(),
                      {shardnode, CNode} ! {'$gen_call', {Inbox, Tag}, shard_types},
                      Received = fun() ->
                                         case peer:call(Peer, erlang, process_info,
                                                        [Inbox, messages]) of
                                             {messages, [_ | _] = Ms} -> {ok, Ms};
                                             _ -> false
                                         end
                                 end,
                      case shardnode_poll:value(Received, 10000) of
                          {ok, Messages} ->
                              ?assertMatch([{Tag, {ok, [_ | _]}}], Messages);
                          timeout ->
                              ct:fail(no_reply_on_peer)
                      end,
                      ?assertMatch([_], connections(Peer, CNode))
              end).

%% The C node and a BEAM peer connect to each other at the same moment,
%% again and again: whichever attempt wins (the greater node name keeps its
%% own, as net_kernel decides), the peer's ping succeeds, the C node's reply
%% queued meanwhile reaches the peer, and one connection remains.
simultaneous_connects_settle(Config) ->
    CNode = ?config(cnode, Config),
    with_peer(Config, #{connection => standard_io},
              fun(Peer) ->
                      MetricsPort = metrics_port(Config),
                      [race_once(Peer, CNode, MetricsPort, Round) || Round <- lists:seq(1, 20)],
                      ok
              end).

race_once(Peer, CNode, MetricsPort, Round) ->
    peer:call(Peer, erlang, disconnect_node, [CNode]),
    wait_for(disconnected, fun() -> connections(Peer, CNode) =:= [] end, 5000),
    %% ... on the C node's side too: a reply it sent on the old connection
    %% before it read that connection's end would be lost with it, as any
    %% message on a connection that goes down is, and the round would
    %% test nothing. Up then: the test node's connection alone.
    wait_for(c_node_disconnected, fun() -> up_connections(MetricsPort) =:= 1 end, 5000),
    Inbox = spawn_inbox(Peer),
    Tag = {round, Round},
    %% both directions at once: the peer pings, and the C node must open a
    %% connection of its own to deliver a reply to the peer's process
    Pinger = peer:call(Peer, erlang, spawn, [net_adm, ping, [CNode]]),
    {shardnode, CNode} ! {'$gen_call', {Inbox, Tag}, shard_types},
    Received = fun() ->
                       case peer:call(Peer, erlang, process_info, [Inbox, messages]) of
                           {messages, [_ | _] = Ms} -> {ok, Ms};
                           _ -> false
                       end
               end,
    case shardnode_poll:value(Received, 10000) of
        {ok, Messages} -> ?assertMatch([{Tag, {ok, [_ | _]}}], Messages);
        timeout -> ct:fail({no_reply_on_peer, Round})
    end,
    wait_for(pinger_done, fun() -> peer:call(Peer, erlang, is_process_alive, [Pinger]) =:= false end, 10000),
    ?assertEqual(pong, peer:call(Peer, net_adm, ping, [CNode])),
    ?assertMatch([_], connections(Peer, CNode)),
    peer:call(Peer, erlang, exit, [Inbox, kill]).

%% erl_call, like every C node built on ei_receive, answers each tick with a
%% tick. The node used to answer every tick too: the two kept a storm of
%% some 20 000 ticks a second going (found by accident: an erl_call to the
%% node waiting for a `rex' it does not have). Now the node answers a tick
%% only after a moment of quiet: with net_ticktime at 1 s, an erl_call
%% waiting on it costs a few ticks a second.
a_peer_echoing_ticks_makes_no_storm(Config) ->
    CNode = ?config(cnode, Config),
    Port = metrics_port(Config),
    ErlCall = os:find_executable("erl_call"),
    ?assertNotEqual(false, ErlCall),
    Cookie = atom_to_list(erlang:get_cookie()),
    %% rpc to a `rex' the C node does not have: erl_call waits, ticking.
    Call = open_port({spawn_executable, ErlCall},
                     [{args, ["-n", atom_to_list(CNode), "-c", Cookie, "-timeout", "5",
                              "-a", "erlang node []"]}, exit_status, stderr_to_stdout]),
    Bytes = fun() ->
                    {ok, Page} = shardnode_ct:metrics_page(Port),
                    {shardnode_ct:metric_value(Page, <<"shardnode_dist_bytes_total{direction=\"in\"}">>),
                     shardnode_ct:metric_value(Page, <<"shardnode_dist_bytes_total{direction=\"out\"}">>)}
            end,
    %% connected (two up: this node's and erl_call's), and a tick or two by
    wait_for(erl_call_connected, fun() -> up_connections(Port) =:= 2 end, 5000),
    timer:sleep(1000),
    {In0, Out0} = Bytes(),
    timer:sleep(2000),
    {In1, Out1} = Bytes(),
    ct:log("over 2 s with erl_call waiting: ~b bytes in, ~b out", [In1 - In0, Out1 - Out0]),
    %% A tick is 4 bytes: a few a second each way, where a storm made 100 KB.
    ?assert(In1 - In0 < 1000),
    ?assert(Out1 - Out0 < 1000),
    receive {Call, {exit_status, _}} -> ok
    after 10000 -> ct:fail(erl_call_did_not_exit)
    end.

%% The metrics port the case's own node was started with.
metrics_port(Config) ->
    #{config := #{metrics_port := Port}} = ?config(cnode_opts, Config),
    Port.

%% The C node's distribution connections that are up, as its metrics say.
up_connections(MetricsPort) ->
    case shardnode_ct:metrics_page(MetricsPort) of
        {ok, Page} -> shardnode_ct:metric_value(Page, <<"shardnode_dist_connections{state=\"up\"}">>);
        {error, _} -> undefined
    end.

%% `leave' is answered `ok'; the admin's monitors get `normal'; the node
%% then exits with status 0 and leaves epmd.
leave_exits_cleanly(Config) ->
    CNode = ?config(cnode, Config),
    {ok, OsPid} = shardnode:os_pid(CNode),
    Mon = erlang:monitor(process, {shardnode, CNode}),
    ?assertEqual(ok, gen_server:call({shardnode, CNode}, leave)),
    receive {'DOWN', Mon, process, _, Reason} -> ?assertEqual(normal, Reason)
    after 5000 -> ct:fail(no_down)
    end,
    wait_for(gone, fun() -> shardnode_ct:gone(CNode) end, 10000),
    wait_for(exited, fun() -> os:cmd("kill -0 " ++ integer_to_list(OsPid) ++ " 2>&1") =/= "" end, 10000).

%% A bad config value: the node exits with status 2 and says which key.
bad_config_refused(_Config) ->
    Name = shardnode_ct:unique_name("c") ++ "@127.0.0.1",
    Lines = case shardnode:start_node(#{name => Name,
                                        config => #{number_of_shards => banana}}) of
                {error, {exited, 2, Output}} ->
                    Output;
                {ok, Node} ->
                    ok = shardnode:stop_node(Node),
                    ct:fail({started_with_bad_config, Node});
                Other ->
                    ct:fail({unexpected, Other})
            end,
    ?assert(lists:any(fun(L) -> mentions(L, "number_of_shards") end, Lines)),
    ?assert(shardnode_ct:gone(list_to_atom(Name))).

%% A node started by the wrapper on a BEAM that then dies (SIGKILL) sees its
%% stdin close, leaves, and exits: no C node outlives the BEAM that owns it.
owner_crash_stops_the_node(Config) ->
    {ok, Peer, PeerNode} = shardnode_ct:start_peer(Config, #{}),
    {ok, _} = erpc:call(PeerNode, application, ensure_all_started, [shardnode]),
    Name = shardnode_ct:unique_name("orphan") ++ "@127.0.0.1",
    {ok, CNode} = erpc:call(PeerNode, shardnode, start_node, [#{name => Name}]),
    {ok, OsPid} = erpc:call(PeerNode, shardnode, os_pid, [CNode]),
    pong = net_adm:ping(CNode),
    PeerOsPid = erpc:call(PeerNode, os, getpid, []),
    unlink(Peer),
    [] = os:cmd("kill -9 " ++ PeerOsPid),
    wait_for(gone, fun() -> shardnode_ct:gone(CNode) end, 15000),
    wait_for(exited, fun() -> os:cmd("kill -0 " ++ integer_to_list(OsPid) ++ " 2>&1") =/= "" end, 10000).

%%====================================================================
%% Helpers
%%====================================================================

%% A process on the peer that keeps whatever it receives. The module it runs
%% is loaded first: loading it from the new process would put the code
%% server's answer in its mailbox.
spawn_inbox(Peer) ->
    {module, timer} = peer:call(Peer, code, ensure_loaded, [timer]),
    peer:call(Peer, erlang, spawn, [timer, sleep, [infinity]]).

with_peer(Config, Opts, Fun) ->
    {ok, Peer, _PeerNode} = shardnode_ct:start_peer(Config, Opts),
    try
        Fun(Peer)
    after
        shardnode_ct:stop_peer(Peer)
    end.

wait_for(What, Fun, TimeoutMs) ->
    case shardnode_poll:until(Fun, TimeoutMs) of
        ok -> ok;
        timeout -> ct:fail({timeout, What})
    end.

flush() ->
    receive Msg -> [Msg | flush()]
    after 0 -> []
    end.

host(Node) ->
    [_, Host] = string:split(atom_to_list(Node), "@"),
    Host.

mentions(Line, Word) ->
    string:find(string:lowercase(Line), Word) =/= nomatch.

%% The lines written since Before was taken (the output keeps 200 lines;
%% a fresh node has written fewer).
new_lines(Before, After) when length(Before) < 200 ->
    lists:nthtail(min(length(Before), length(After)), After);
new_lines(_Before, After) ->
    After.

%% The peer's connections to Node, by connection id: the same id means the
%% same connection, never dropped and made again.
connections(Peer, Node) ->
    [Id || {N, #{connection_id := Id}} <-
               peer:call(Peer, erlang, nodes, [hidden, #{connection_id => true}]),
           N =:= Node].

dist_port(Node) ->
    [Alive, _] = string:split(atom_to_list(Node), "@"),
    {port, Port, _Version} = erl_epmd:port_please(Alive, {127, 0, 0, 1}),
    Port.

assert_alive(CNode, Port, After) ->
    case net_adm:ping(CNode) of
        pong -> ok;
        pang -> ct:fail({no_pong_after, After})
    end,
    case catch gen_server:call({shardnode, CNode}, shard_types, 5000) of
        {ok, [_ | _]} -> ok;
        Other -> ct:fail({no_reply_after, After, Other})
    end,
    case raw_call(Port, shard_types) of
        {ok, {ok, [_ | _]}} -> ok;
        Error -> ct:fail({new_connection_failed_after, After, Error})
    end.

%%--------------------------------------------------------------------
%% Hand-made distribution connections

probe_name() ->
    list_to_binary(shardnode_ct:unique_name("probe") ++ "@127.0.0.1").

connect(Port, Packet) ->
    {ok, Sock} = gen_tcp:connect({127, 0, 0, 1}, Port,
                                 [binary, {active, false}, {packet, Packet}], 5000),
    Sock.

send_name(Name) ->
    <<$N, ?PROBE_FLAGS:64, ?PROBE_CREATION:32, (byte_size(Name)):16, Name/binary>>.

%% the version 5 send_name, which an OTP 25 node no longer needs to accept
old_send_name(Name) ->
    Body = <<$n, 5:16, (?PROBE_FLAGS band 16#ffffffff):32, Name/binary>>,
    <<(byte_size(Body)):16, Body/binary>>.

bogus_names() ->
    [<<"no_at_sign">>, <<"@">>, <<"x@">>, <<"@127.0.0.1">>,
     <<255, 254, "@127.0.0.1">>, <<"a@b@c">>, binary:copy(<<"a">>, 1000),
     <<>>].

digest(Challenge, Cookie) ->
    erlang:md5([atom_to_list(Cookie), integer_to_list(Challenge)]).

%% Sends Bytes on a new connection (framed as they are), gives the node up
%% to 2 s to answer or close, then closes. Returns what the node did, for
%% the log.
poke(Port, Bytes) ->
    Sock = connect(Port, raw),
    ok = gen_tcp:send(Sock, Bytes),
    Seen = await_close(Sock, 2000),
    ct:log("poke ~0tp: ~0tp", [shorten(Bytes), Seen]),
    gen_tcp:close(Sock),
    Seen.

shorten(<<Head:16/binary, _/binary>>) -> {Head, '...'};
shorten(Bytes) -> Bytes.

await_close(Sock, TimeoutMs) ->
    await_close(Sock, erlang:monotonic_time(millisecond) + TimeoutMs, []).

await_close(Sock, Deadline, Got) ->
    Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
    case gen_tcp:recv(Sock, 0, Left) of
        {ok, Data} -> await_close(Sock, Deadline, [Data | Got]);
        {error, closed} -> {closed, lists:reverse(Got)};
        {error, timeout} -> {open, lists:reverse(Got)};
        {error, Reason} -> {Reason, lists:reverse(Got)}
    end.

%% The initiator's side of the version 6 handshake, up to and including the
%% challenge: returns the socket and the node's challenge.
handshake_to_challenge(Port, Name) ->
    Sock = connect(Port, 2),
    ok = gen_tcp:send(Sock, send_name(Name)),
    ?assertEqual({ok, <<"sok">>}, gen_tcp:recv(Sock, 0, 5000)),
    {ok, Challenge} = gen_tcp:recv(Sock, 0, 5000),
    <<$N, _Flags:64, Number:32, _Creation:32, NameLen:16, _:NameLen/binary>> = Challenge,
    {Sock, Number}.

%% The whole handshake; returns a socket framed with 4-byte lengths.
handshake(Port, Name) ->
    Cookie = erlang:get_cookie(),
    {Sock, Challenge} = handshake_to_challenge(Port, Name),
    Mine = rand:uniform(16#ffffffff),
    ok = gen_tcp:send(Sock, <<$r, Mine:32, (digest(Challenge, Cookie))/binary>>),
    {ok, <<$a, Ack/binary>>} = gen_tcp:recv(Sock, 0, 5000),
    ?assertEqual(digest(Mine, Cookie), Ack),
    ok = inet:setopts(Sock, [{packet, 4}]),
    Sock.

abandon_handshake(Port) ->
    {Sock, _} = handshake_to_challenge(Port, probe_name()),
    gen_tcp:close(Sock).

%% A challenge reply made with the wrong cookie is never acknowledged: the
%% node closes the connection.
wrong_digest(Port) ->
    {Sock, Challenge} = handshake_to_challenge(Port, probe_name()),
    ok = gen_tcp:send(Sock, <<$r, 42:32, (digest(Challenge, wrong_cookie))/binary>>),
    ?assertEqual({error, closed}, gen_tcp:recv(Sock, 0, 5000)),
    gen_tcp:close(Sock).

%% After a good handshake, a packet length of 2 GB: the node must not try
%% to allocate it. It reads past what comes of it (holding 8 KiB of its
%% head at most) and keeps the connection, in step, for what follows.
huge_packet(Port) ->
    Sock = handshake(Port, probe_name()),
    ok = inet:setopts(Sock, [{packet, raw}]),
    ok = gen_tcp:send(Sock, <<16#7fffffff:32, ?PASS_THROUGH, 131>>),
    ok = gen_tcp:send(Sock, binary:copy(<<0>>, 1024 * 1024)),
    ?assertMatch({open, _}, await_close(Sock, 1000)),
    gen_tcp:close(Sock).

%% After a good handshake, packets that are not valid distribution
%% messages: unknown packet type, undecodable control message, unknown
%% control message, a REG_SEND without its message.
garbage_packets(Port) ->
    Sock = handshake(Port, probe_name()),
    Packets = [<<1, 2, 3>>,
               <<?PASS_THROUGH, 131, 255, 255, 255>>,
               <<?PASS_THROUGH, (term_to_binary({9999, foo}))/binary>>,
               <<?PASS_THROUGH, (term_to_binary({?REG_SEND, self(), '', shardnode}))/binary>>,
               <<?PASS_THROUGH, 131>>,
               <<?PASS_THROUGH>>],
    [gen_tcp:send(Sock, P) || P <- Packets],
    ct:log("garbage packets: ~0tp", [await_close(Sock, 2000)]),
    gen_tcp:close(Sock).

%% N connections at once, half of them stopping after a partial send_name;
%% then all closed.
flood(Port, N) ->
    Parent = self(),
    Pids = [spawn_link(fun() ->
                               Result = gen_tcp:connect({127, 0, 0, 1}, Port,
                                                        [binary, {active, false}], 10000),
                               case Result of
                                   {ok, Sock} when I rem 2 =:= 0 ->
                                       _ = gen_tcp:send(Sock, <<0, 100, $N>>);
                                   _ ->
                                       ok
                               end,
                               Parent ! {self(), connected, element(1, Result)},
                               receive close -> ok end
                       end) || I <- lists:seq(1, N)],
    Results = [receive {Pid, connected, R} -> R after 15000 -> timeout end || Pid <- Pids],
    ct:log("flood: ~b of ~b connected", [length([ok || ok <- Results]), N]),
    [Pid ! close || Pid <- Pids],
    ok.

%% A '$gen_call' to the admin over a new hand-made connection: proves that
%% the node still accepts connections and answers on them. Returns
%% {ok, Reply}.
raw_call(Port, Request) ->
    Name = probe_name(),
    Sock = handshake(Port, Name),
    From = probe_pid(Name),
    Tag = make_ref(),
    Control = term_to_binary({?REG_SEND, From, '', shardnode}, [{minor_version, 2}]),
    Message = term_to_binary({'$gen_call', {From, Tag}, Request}, [{minor_version, 2}]),
    ok = gen_tcp:send(Sock, [?PASS_THROUGH, Control, Message]),
    Reply = receive_reply(Sock, Tag, erlang:monotonic_time(millisecond) + 5000),
    gen_tcp:close(Sock),
    Reply.

%% A pid on the hand-made node (NEW_PID_EXT).
probe_pid(Name) ->
    binary_to_term(<<131, 88, 119, (byte_size(Name)), Name/binary,
                     1:32, 0:32, ?PROBE_CREATION:32>>).

receive_reply(Sock, Tag, Deadline) ->
    Left = max(0, Deadline - erlang:monotonic_time(millisecond)),
    case gen_tcp:recv(Sock, 0, Left) of
        {ok, <<>>} ->
            %% a tick
            receive_reply(Sock, Tag, Deadline);
        {ok, <<?PASS_THROUGH, Rest/binary>>} ->
            {_Control, Used} = binary_to_term(Rest, [used]),
            case Rest of
                <<_:Used/binary, Msg/binary>> when Msg =/= <<>> ->
                    case binary_to_term(Msg) of
                        {Tag, Reply} -> {ok, Reply};
                        _Other -> receive_reply(Sock, Tag, Deadline)
                    end;
                _ ->
                    %% a control message without a payload (monitor, link ...)
                    receive_reply(Sock, Tag, Deadline)
            end;
        {ok, Other} ->
            {error, {unexpected_packet, Other}};
        {error, Reason} ->
            {error, Reason}
    end.
