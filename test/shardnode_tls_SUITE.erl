%% TLS distribution (docs/contract.md "TLS"): C nodes with tls_certfile,
%% tls_keyfile and tls_cacertfile against real BEAM nodes started with
%% -proto_dist inet_tls -ssl_dist_optfile. The certificates are made by
%% scripts/tls-certs.sh (the openssl command) for the suite; none are
%% checked in. The test node itself speaks plain TCP, so it drives the TLS
%% BEAM nodes over their standard input (peer's standard_io connection).
-module(shardnode_tls_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([suite/0, all/0, init_per_suite/1, end_per_suite/1, end_per_testcase/2]).
-export([a_tls_beam_node_pings_calls_tells_and_monitors/1,
         tls_1_2_and_1_3/1,
         c_nodes_cluster_over_tls/1,
         a_mixed_cluster_over_tls/1,
         a_plain_node_is_refused/1,
         a_certificate_of_another_ca_is_refused/1,
         an_expired_certificate_is_refused/1,
         a_stalled_tls_handshake_delays_nobody/1,
         settings_that_cannot_load_stop_the_node/1]).
-export([tell_and_wait/2, catch_call/2, many_calls/2, start_watch/1, watched/2,
         start_collector/0, collected/1, send_call/3]).

suite() -> [{timetrap, {minutes, 2}}].

all() ->
    [a_tls_beam_node_pings_calls_tells_and_monitors,
     tls_1_2_and_1_3,
     c_nodes_cluster_over_tls,
     a_mixed_cluster_over_tls,
     a_plain_node_is_refused,
     a_certificate_of_another_ca_is_refused,
     an_expired_certificate_is_refused,
     a_stalled_tls_handshake_delays_nobody,
     settings_that_cannot_load_stop_the_node].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Dir = filename:join(?config(priv_dir, Config), "certs"),
    Out = os:cmd(filename:join(root(), "scripts/tls-certs.sh") ++ " " ++ Dir ++ " 2>&1; echo rc=$?"),
    ct:log("~ts", [Out]),
    ?assertMatch({match, _}, re:run(Out, "rc=0")),
    [{certs, Dir} | Config].

end_per_suite(_Config) ->
    ?assertEqual([], shardnode:which_nodes()),
    ok.

end_per_testcase(_Case, Config) ->
    [shardnode_ct:stop_peer(P) || P <- get_peers()],
    shardnode_ct:stop_all_nodes(Config).

%%====================================================================
%% Cases
%%====================================================================

%% A BEAM node over TLS reaches a TLS C node as it would a BEAM one.
a_tls_beam_node_pings_calls_tells_and_monitors(Config) ->
    {[C], _} = shardnode_ct:start_nodes(Config, [tls_opts(Config)]),
    P = tls_peer(Config, "node"),
    ?assertEqual(pong, peer:call(P, net_adm, ping, [C])),
    ?assertEqual(1, peer:call(P, gen_server, call, [{counter, C}, {<<"k">>, incr}])),
    ?assertEqual({counter, <<"k">>, 2}, peer:call(P, ?MODULE, tell_and_wait, [{counter, C}, {<<"k">>, incr}])),
    ?assertEqual({ok, [#{node => C, status => up}]}, peer:call(P, gen_server, call, [{shardnode, C}, members])),
    ?assertMatch({'EXIT', {noproc, _}}, peer:call(P, ?MODULE, catch_call, [{nobody, C}, hi])),
    ?assertMatch([C], peer:call(P, erlang, nodes, [hidden])),
    %% a message of many TLS records, both ways, and many at once
    Big = binary:copy(<<"0123456789abcdef">>, 65536),
    ?assertEqual(Big, peer:call(P, gen_server, call, [{echo, C}, {big, Big}])),
    ?assertEqual(lists:seq(1, 500), peer:call(P, ?MODULE, many_calls, [{counter, C}, 500])),
    %% monitors: one on a name that is not there fires with noproc; one on
    %% a name that is stays quiet until the node leaves, then normal (the
    %% node's last words over TLS; a lost connection is noconnection, see
    %% a_mixed_cluster_over_tls)
    ?assertEqual({'DOWN', noproc}, peer:call(P, ?MODULE, watched, [peer:call(P, ?MODULE, start_watch, [{nobody, C}]), 5000])),
    W = peer:call(P, ?MODULE, start_watch, [{counter, C}]),
    ?assertEqual(0, peer:call(P, gen_server, call, [{counter, C}, {<<"after the monitor">>, get}])),
    ?assertEqual(none, peer:call(P, ?MODULE, watched, [W, 0])),
    ok = shardnode_ct:stop_nodes(Config, [C]),
    ?assertEqual({'DOWN', normal}, peer:call(P, ?MODULE, watched, [W, 5000])).

%% Runs on a peer: N calls in flight at once, their answers in order.
many_calls(To, N) ->
    Self = self(),
    Pids = [spawn(fun() -> Self ! {self(), gen_server:call(To, {many, incr}, 10000)} end) || _ <- lists:seq(1, N)],
    lists:sort([receive {P, V} -> V after 15000 -> timeout end || P <- Pids]).

%% A BEAM node that speaks only TLS 1.2, and one only 1.3, both connect.
tls_1_2_and_1_3(Config) ->
    {[C], _} = shardnode_ct:start_nodes(Config, [tls_opts(Config)]),
    [begin
         P = tls_peer(Config, "node", [{versions, [V]}]),
         ?assertEqual(pong, peer:call(P, net_adm, ping, [C])),
         ?assertEqual(0, peer:call(P, gen_server, call, [{counter, C}, {V, get}]))
     end || V <- ['tlsv1.2', 'tlsv1.3']].

%% Two C nodes over TLS form one cluster; a TLS BEAM node sees it whole.
c_nodes_cluster_over_tls(Config) ->
    {[A], _} = shardnode_ct:start_nodes(Config, [tls_opts(Config)]),
    {[B], _} = shardnode_ct:start_nodes(Config, [(tls_opts(Config))#{join => [A]}]),
    P = tls_peer(Config, "node"),
    Members = fun() -> peer:call(P, gen_server, call, [{shardnode, B}, members]) end,
    ?assertEqual(ok, shardnode_poll:until(
                       fun() -> Members() =:= {ok, [#{node => A, status => up}, #{node => B, status => up}]} end,
                       15000)),
    Values = [peer:call(P, gen_server, call, [{counter, N}, {I, incr}]) || I <- lists:seq(1, 20), N <- [A, B]],
    ?assertEqual(lists:append([[1, 2] || _ <- lists:seq(1, 20)]), Values).

%% A mixed cluster over TLS: two BEAM nodes connected to each other and to
%% two clustered C nodes. A call made on one BEAM node whose reply goes to
%% a process on the other makes the C node open a TLS connection to that
%% BEAM node itself (the C node as the TLS client, checking the BEAM
%% node's certificate against the host of its name).
a_mixed_cluster_over_tls(Config) ->
    {[A], _} = shardnode_ct:start_nodes(Config, [tls_opts(Config)]),
    {[B], _} = shardnode_ct:start_nodes(Config, [(tls_opts(Config))#{join => [A]}]),
    P1 = tls_peer(Config, "node"),
    P2 = tls_peer(Config, "node"),
    P2Node = peer:call(P2, erlang, node, []),
    ?assertEqual(pong, peer:call(P1, net_adm, ping, [P2Node])),
    ?assertEqual(ok, shardnode_poll:until(
                       fun() -> [A, B] =:= peer:call(P1, shardnode_ct, members, [B]) end, 15000)),
    ?assertEqual(false, lists:member(A, peer:call(P2, erlang, nodes, [hidden]))),
    Collector = peer:call(P2, ?MODULE, start_collector, []),
    Ref = peer:call(P1, ?MODULE, send_call, [{counter, A}, {<<"m">>, incr}, Collector]),
    ?assertEqual(ok, shardnode_poll:until(fun() -> [{Ref, 1}] =:= peer:call(P2, ?MODULE, collected, [Collector]) end,
                                          10000)),
    ?assert(lists:member(A, peer:call(P2, erlang, nodes, [hidden]))),
    %% both BEAM nodes reach the same entities through either C node
    Values = [peer:call(P, gen_server, call, [{counter, N}, {<<"m">>, incr}]) || P <- [P1, P2], N <- [A, B]],
    ?assertEqual([2, 3, 4, 5], Values),
    %% a C node killed: a monitor on it from a BEAM node fires with
    %% noconnection
    W = peer:call(P2, ?MODULE, start_watch, [{counter, B}]),
    ?assertEqual(0, peer:call(P2, gen_server, call, [{counter, B}, {<<"after the monitor">>, get}])),
    ok = shardnode:kill_node(B),
    ?assertEqual({'DOWN', noconnection}, peer:call(P2, ?MODULE, watched, [W, 5000])),
    %% downed now, not after the failure detector and downing have run:
    %% A's leave at the end waits for no unreachable member
    ?assertEqual(ok, peer:call(P1, gen_server, call, [{shardnode, A}, {down, B}])).

%% A BEAM node speaking plain TCP gets pang, and the C node says why in
%% one line.
a_plain_node_is_refused(Config) ->
    {[C], _} = shardnode_ct:start_nodes(Config, [tls_opts(Config)]),
    {ok, P, _} = shardnode_ct:start_peer(Config, #{connection => standard_io}),
    put_peer(P),
    ?assertEqual(pang, peer:call(P, net_adm, ping, [C])),
    ?assertEqual(ok, shardnode_poll:until(fun() -> said(C, <<"TLS connection">>) end, 5000)),
    ?assertEqual(pong, peer:call(tls_peer(Config, "node"), net_adm, ping, [C])).

%% A BEAM node whose certificate chains to another CA is refused (it
%% trusts ours, so the refusal is the C node's); so is a C node of
%% another CA that tries to join.
a_certificate_of_another_ca_is_refused(Config) ->
    {[C], _} = shardnode_ct:start_nodes(Config, [tls_opts(Config)]),
    P = tls_peer(Config, "other"),
    ?assertEqual(pang, peer:call(P, net_adm, ping, [C])),
    ?assertEqual(ok, shardnode_poll:until(fun() -> said(C, <<"certificate">>) end, 5000)),
    ?assertEqual(pong, peer:call(tls_peer(Config, "node"), net_adm, ping, [C])).

%% A BEAM node whose certificate, from our CA, has expired is refused;
%% so is the expired C node's side when a BEAM node connects to it.
an_expired_certificate_is_refused(Config) ->
    {[C], _} = shardnode_ct:start_nodes(Config, [tls_opts(Config)]),
    ?assertEqual(pang, peer:call(tls_peer(Config, "expired"), net_adm, ping, [C])),
    ?assertEqual(ok, shardnode_poll:until(fun() -> said(C, <<"certificate has expired">>) end, 5000)),
    Dir = ?config(certs, Config),
    {[E], _} = shardnode_ct:start_nodes(Config, [#{config => #{tls_certfile => filename:join(Dir, "expired.pem"),
                                                               tls_keyfile => filename:join(Dir, "expired.key"),
                                                               tls_cacertfile => filename:join(Dir, "ca.pem")}}]),
    ?assertEqual(pang, peer:call(tls_peer(Config, "node"), net_adm, ping, [E])),
    ?assertEqual(pong, peer:call(tls_peer(Config, "node"), net_adm, ping, [C])).

%% A peer that opens a TCP connection and sends half a TLS hello, then
%% nothing, holds up nobody else.
a_stalled_tls_handshake_delays_nobody(Config) ->
    {[C], _} = shardnode_ct:start_nodes(Config, [tls_opts(Config)]),
    [Alive, _] = string:split(atom_to_list(C), "@"),
    {port, Port, _} = erl_epmd:port_please(Alive, {127, 0, 0, 1}),
    {ok, S} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
    ok = gen_tcp:send(S, <<22, 3, 1, 0, 200, 1, 0, 0>>),
    P = tls_peer(Config, "node"),
    T0 = erlang:monotonic_time(millisecond),
    ?assertEqual(pong, peer:call(P, net_adm, ping, [C])),
    ?assertEqual(1, peer:call(P, gen_server, call, [{counter, C}, {x, incr}])),
    Ms = erlang:monotonic_time(millisecond) - T0,
    ct:log("ping and call with a stalled handshake open: ~b ms", [Ms]),
    ?assert(Ms < 3000),
    gen_tcp:close(S).

%% A certificate that cannot be read, or TLS settings given in part: the
%% node does not start, and says why.
settings_that_cannot_load_stop_the_node(Config) ->
    Dir = ?config(certs, Config),
    Bad = fun(Tls) ->
                  {error, {exited, Status, Lines}} =
                      shardnode:start_node(#{name => "tlsbad@127.0.0.1", config => Tls}),
                  {Status, Lines}
          end,
    {S1, L1} = Bad(#{tls_certfile => "/nonexistent.pem", tls_keyfile => filename:join(Dir, "node.key"),
                     tls_cacertfile => filename:join(Dir, "ca.pem")}),
    ?assertNotEqual(0, S1),
    ?assertMatch([_ | _], [L || L <- L1, binary:match(L, <<"tls_certfile">>) =/= nomatch]),
    {2, L2} = Bad(#{tls_certfile => filename:join(Dir, "node.pem")}),
    ?assertMatch([_ | _], [L || L <- L2, binary:match(L, <<"all three">>) =/= nomatch]).

%%====================================================================
%% Helpers
%%====================================================================

%% Runs on a peer: a tell, and the reply it brings.
tell_and_wait(To, Msg) ->
    To ! Msg,
    receive R -> R after 5000 -> no_reply end.

catch_call(To, Msg) ->
    catch gen_server:call(To, Msg, 5000).

%% Runs on a peer: a process that monitors To and keeps what it hears.
start_watch(To) ->
    spawn(fun() ->
                  Ref = erlang:monitor(process, To),
                  watch_loop(Ref, none)
          end).

watch_loop(Ref, Heard) ->
    receive
        {'DOWN', Ref, process, _, Reason} -> watch_loop(Ref, {'DOWN', Reason});
        {get, From} -> From ! {watched, Heard}, watch_loop(Ref, Heard)
    end.

%% Runs on a peer: what the watcher W has heard, waiting up to Ms for a
%% 'DOWN'.
watched(W, Ms) ->
    Deadline = erlang:monotonic_time(millisecond) + Ms,
    watched_until(W, Deadline).

watched_until(W, Deadline) ->
    W ! {get, self()},
    Heard = receive {watched, H} -> H end,
    case Heard =:= none andalso erlang:monotonic_time(millisecond) < Deadline of
        true -> receive after 20 -> watched_until(W, Deadline) end;
        false -> Heard
    end.

%% Runs on a peer: a process that keeps every message it gets.
start_collector() ->
    spawn(fun() -> collect_loop([]) end).

collect_loop(Got) ->
    receive
        {'$collected', From} -> From ! {collected, lists:reverse(Got)}, collect_loop(Got);
        Msg -> collect_loop([Msg | Got])
    end.

collected(Collector) ->
    Collector ! {'$collected', self()},
    receive {collected, Got} -> Got after 5000 -> timeout end.

%% Runs on a peer: a gen_server call to To whose reply goes to ReplyTo;
%% returns the call's reference.
send_call(To, Msg, ReplyTo) ->
    Ref = make_ref(),
    To ! {'$gen_call', {ReplyTo, Ref}, Msg},
    Ref.

tls_opts(Config) ->
    #{config => (shardnode_ct:tls_config(?config(certs, Config), "node"))#{heartbeat_interval_ms => 200}}.

%% A BEAM node with TLS distribution, its certificate Cert (node or other),
%% trusting our CA; driven over standard input, with this suite's helpers.
tls_peer(Config, Cert) ->
    tls_peer(Config, Cert, []).

%% With Opts added to both sides' ssl options.
tls_peer(Config, Cert, Opts) ->
    {ok, P, _} = shardnode_ct:start_tls_peer(Config, #{certs => ?config(certs, Config), cert => Cert, ssl => Opts,
                                                       pa => [filename:dirname(code:which(?MODULE))]}),
    put_peer(P),
    P.

put_peer(P) -> put(peers, [P | get_peers()]).

get_peers() ->
    case get(peers) of
        undefined -> [];
        Ps -> Ps
    end.

%% Whether the node's output has a line with Text.
said(Node, Text) ->
    {ok, Lines} = shardnode:output(Node),
    [L || L <- Lines, binary:match(L, Text) =/= nomatch] =/= [].

%% The repository's root: where rebar3 ct runs from.
root() ->
    {ok, Cwd} = file:get_cwd(),
    find_root(Cwd).

find_root("/") -> error(no_repository_root);
find_root(Dir) ->
    case filelib:is_regular(filename:join(Dir, "scripts/tls-certs.sh")) of
        true -> Dir;
        false -> find_root(filename:dirname(Dir))
    end.
