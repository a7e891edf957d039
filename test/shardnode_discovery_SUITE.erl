%% Discovery by DNS (docs/contract.md "A cluster", `--join-dns NAME'):
%% five C nodes, each in a Linux network namespace of its own on a bridge
%% this suite makes (10.79.0.0/24, `snds0'), named sn@<their address>, and
%% a real DNS server, dnsmasq, on the bridge: each namespace's resolver
%% asks it (/etc/netns/<ns>/resolv.conf). The name's A and AAAA records
%% come from a hosts file dnsmasq reads again on SIGHUP, so the suite adds
%% and removes them while the nodes run, as a Kubernetes headless service
%% does while pods start.
%%
%% Needs root, iproute2 and dnsmasq (`make deps' installs them). Where a
%% namespace cannot be made, every case is skipped, with the reason.
%%
%%   rebar3 ct --dir test --suite shardnode_discovery_SUITE
-module(shardnode_discovery_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1, init_per_testcase/2, end_per_testcase/2]).
-export([five_nodes_with_only_the_name_form_one_cluster/1,
         a_restarted_member_joins_the_running_cluster/1]).

-define(BRIDGE, "snds0").
-define(NET, "10.79.0.").
-define(NET6, "fd79::").
-define(N, 5).
-define(NAME, "shardnode.test").
-define(FORMING, <<"no cluster answered: forming a new one">>).

suite() -> [{timetrap, {minutes, 3}}].

all() ->
    [five_nodes_with_only_the_name_form_one_cluster,
     a_restarted_member_joins_the_running_cluster].

init_per_suite(Config) ->
    teardown(),
    case os:find_executable("dnsmasq", "/usr/sbin:/sbin:" ++ os:getenv("PATH", "")) of
        false -> ct:fail("dnsmasq not found: make deps installs Debian's dnsmasq-base");
        Dnsmasq -> start(Config, Dnsmasq)
    end.

start(Config, Dnsmasq) ->
    case setup_network() of
        ok ->
            Hosts = filename:join(?config(priv_dir, Config), "dns-hosts"),
            Pid = filename:join(?config(priv_dir, Config), "dnsmasq.pid"),
            ok = file:write_file(Hosts, <<>>),
            %% --bind-interfaces on the bridge's address alone: no other
            %% DNS server on this machine is touched
            ok = sh(Dnsmasq ++ " --no-resolv --no-hosts --addn-hosts=" ++ Hosts ++ " --listen-address=" ?NET
                    "254 --bind-interfaces --port=53 --pid-file=" ++ Pid ++ " --user=root"),
            {ok, _} = application:ensure_all_started(shardnode),
            [{dns_hosts, Hosts}, {dnsmasq_pid, Pid} | Config];
        {error, Why} ->
            teardown(),
            {skip, lists:flatten(io_lib:format("network namespaces cannot be made here: ~ts", [Why]))}
    end.

end_per_suite(Config) ->
    {ok, Pid} = file:read_file(?config(dnsmasq_pid, Config)),
    ok = sh("kill " ++ string:trim(binary_to_list(Pid))),
    teardown(),
    ?assertEqual([], [NS || NS <- namespaces(), lists:member(NS, string:lexemes(os:cmd("ip netns list"), "\n "))]),
    ?assertEqual([], shardnode:which_nodes()),
    ok.

init_per_testcase(_Case, Config) ->
    set_records(Config, []),
    Config.

end_per_testcase(_Case, Config) ->
    shardnode_ct:stop_all_nodes(Config),
    [sh("ip netns pids " ++ NS ++ " | xargs -r kill -9") || NS <- namespaces()],
    ok.

%%====================================================================
%% Cases
%%====================================================================

%% Five nodes started at once, each given only the name, which has no
%% address yet: all stay joining, looking it up again. Then the name gets
%% an A and an AAAA record per node: they find each other, the lowest
%% (sn@10.79.0.1) alone forms the cluster, the others join it, and every
%% entity answers through every node.
five_nodes_with_only_the_name_form_one_cluster(Config) ->
    {Nodes, _} = shardnode_ct:start_nodes_at_once(Config, [opts(I) || I <- lists:seq(1, ?N)]),
    ?assertEqual([joining || _ <- Nodes], [shardnode_ct:member_status(N, N) || N <- Nodes]),
    set_records(Config, lists:seq(1, ?N)),
    await(fun() -> same_up_members(Nodes, Nodes) end),
    await(fun() -> all_answer(Nodes) end),
    ?assertEqual([sn(1)], [N || N <- Nodes, said(N, ?FORMING)]),
    %% the AAAA records are seeds too (this node's distribution speaks IPv4,
    %% so they are only tried)
    ?assert(said(sn(3), <<"join_dns " ?NAME ": 10 seeds, the lowest sn@10.79.0.1">>)).

%% The cluster runs; its lowest member leaves and starts again with the
%% same name, finds itself the lowest once more, and joins the four (they
%% answer its join) instead of forming a cluster of its own.
a_restarted_member_joins_the_running_cluster(Config) ->
    set_records(Config, lists:seq(1, ?N)),
    {Nodes, Config1} = shardnode_ct:start_nodes_at_once(Config, [opts(I) || I <- lists:seq(1, ?N)]),
    await(fun() -> same_up_members(Nodes, Nodes) end),
    [First | Rest] = Nodes,
    ?assertEqual(sn(1), First),
    ok = shardnode:stop_node(First),
    await(fun() -> same_up_members(Rest, Rest) end),
    {[First], _} = shardnode_ct:start_nodes(Config1, [opts(1)]),
    await(fun() -> same_up_members(Nodes, Nodes) end),
    ?assertNot(said(First, ?FORMING)),
    await(fun() -> all_answer(Nodes) end).

%%====================================================================
%% Helpers
%%====================================================================

opts(I) ->
    #{name => atom_to_list(sn(I)), netns => ns(I),
      config => #{join_dns => ?NAME, number_of_shards => 30, heartbeat_interval_ms => 200,
                  failure_timeout_ms => 1000, stable_after_ms => 2000, retry_interval_ms => 500,
                  rebalance_interval_ms => 300}}.

sn(I) -> list_to_atom("sn@" ++ addr(I)).

addr(I) -> ?NET ++ integer_to_list(I).

ns(I) -> "snds" ++ integer_to_list(I).

namespaces() -> [ns(I) || I <- lists:seq(1, ?N)].

%% The name resolves to nodes Is (an A and an AAAA record each) from now
%% on: dnsmasq reads its hosts file again on SIGHUP.
set_records(Config, Is) ->
    Lines = [[addr(I), " ", ?NAME, "\n", ?NET6, integer_to_list(I), " ", ?NAME, "\n"] || I <- Is],
    ok = file:write_file(?config(dns_hosts, Config), Lines),
    {ok, Pid} = file:read_file(?config(dnsmasq_pid, Config)),
    ok = sh("kill -HUP " ++ string:trim(binary_to_list(Pid))).

%% Whether a line of Node's output holds Text.
said(Node, Text) ->
    {ok, Lines} = shardnode:output(Node),
    lists:any(fun(L) -> binary:match(L, Text) =/= nomatch end, Lines).

%% The namespaces on the bridge (sn_netns), each resolver asking dnsmasq
%% on the bridge's address (.254).
setup_network() ->
    sn_netns:setup(?BRIDGE, ?NET, [{ns(I), addr(I)} || I <- lists:seq(1, ?N)],
                   fun(NS) -> ["mkdir -p /etc/netns/" ++ NS,
                               "echo 'nameserver " ?NET "254' > /etc/netns/" ++ NS ++ "/resolv.conf"]
                   end).

teardown() ->
    sn_netns:teardown(?BRIDGE, namespaces()),
    [sh("rm -rf /etc/netns/" ++ NS) || NS <- namespaces()],
    ok.

sh(Cmd) -> sn_netns:sh(Cmd).

same_up_members(At, Expected) -> sn_netns:same_up_members(At, Expected).

%% 40 counters answer through every node of `Nodes'.
all_answer(Nodes) ->
    lists:all(fun(N) ->
                      lists:all(fun(I) -> is_integer(catch gen_server:call({counter, N}, {I, get}, 1000)) end,
                                lists:seq(0, 39))
              end, Nodes).

await(Fun) -> sn_test:await(Fun, 30000).
