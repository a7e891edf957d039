%% The metrics endpoint (docs/contract.md "Metrics", docs/metrics.md)
%% against real nodes: the page passes `promtool check metrics' (Debian's
%% prometheus package); counters move as calls, tells and hand-offs
%% happen; malformed, oversized and pipelined requests; a client sending
%% one byte a second; a thousand scrapers at once. Through all of it the
%% node keeps serving its entities and the endpoint answers again after.
%% The HTTP client is gen_tcp, so the bytes on the wire are the test's.
-module(shardnode_metrics_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([suite/0, all/0, init_per_suite/1, end_per_suite/1, end_per_testcase/2]).
-export([the_page_passes_promtool/1,
         counters_move_as_messages_are_handled/1,
         hand_offs_and_rebalances_are_counted/1,
         bad_requests_get_400_and_change_nothing/1,
         a_client_sending_a_byte_a_second_holds_only_itself/1,
         a_thousand_scrapers_at_once/1,
         the_log_level_shows_and_metrics_off_means_no_port/1,
         the_dashboard_queries_are_promql/1,
         ready_turns_200_once_the_node_has_joined/1,
         unroutable_messages_are_logged_once_and_counted/1,
         the_whole_time_counts_waits_on_the_member_that_forwarded/1,
         the_info_carries_the_version/1]).

suite() -> [{timetrap, {minutes, 2}}].

all() ->
    [the_page_passes_promtool,
     counters_move_as_messages_are_handled,
     hand_offs_and_rebalances_are_counted,
     bad_requests_get_400_and_change_nothing,
     a_client_sending_a_byte_a_second_holds_only_itself,
     a_thousand_scrapers_at_once,
     the_log_level_shows_and_metrics_off_means_no_port,
     the_dashboard_queries_are_promql,
     ready_turns_200_once_the_node_has_joined,
     unroutable_messages_are_logged_once_and_counted,
     the_whole_time_counts_waits_on_the_member_that_forwarded,
     the_info_carries_the_version].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    case os:find_executable("promtool") of
        false -> ct:fail("promtool not found: make deps installs Debian's prometheus package");
        Promtool -> [{promtool, Promtool} | Config]
    end.

end_per_suite(_Config) ->
    ?assertEqual([], shardnode:which_nodes()),
    ok.

end_per_testcase(_Case, Config) ->
    shardnode_ct:stop_nodes(Config, shardnode:which_nodes()).

%%====================================================================
%% Cases
%%====================================================================

%% A node with a store, so every family of the page is there: promtool
%% finds nothing to say, and the families of the contract are present.
the_page_passes_promtool(Config) ->
    Port = free_port(),
    DataDir = filename:join(?config(priv_dir, Config), "lmdb"),
    {[C], _} = shardnode_ct:start_nodes(Config, [#{config => #{metrics_port => Port, state_store => lmdb,
                                                               data_dir => DataDir}}]),
    [1, 2] = [gen_server:call({counter, C}, {<<"a">>, incr}) || _ <- [1, 2]],
    %% The region's settings as given, not whether there is a store.
    ?assertMatch(#{settings := #{state_store := lmdb}}, sys:get_state({counter, C}, 1000)),
    {200, Headers, Page} = get(Port, "/metrics"),
    ?assertEqual(<<"text/plain; version=0.0.4; charset=utf-8">>, header(<<"content-type">>, Headers)),
    File = filename:join(?config(priv_dir, Config), "page.txt"),
    ok = file:write_file(File, Page),
    Out = os:cmd(?config(promtool, Config) ++ " check metrics < " ++ File ++ " 2>&1; echo rc=$?"),
    ct:log("promtool:~n~ts", [Out]),
    ?assertEqual("rc=0\n", Out),
    Families = [<<"shardnode_messages_total">>, <<"shardnode_reply_latency_seconds">>,
                <<"shardnode_entities">>, <<"shardnode_shards">>, <<"shardnode_buffered_messages">>,
                <<"shardnode_dropped_messages_total">>, <<"shardnode_handoffs_total">>,
                <<"shardnode_handoff_duration_seconds">>, <<"shardnode_rebalances_total">>,
                <<"shardnode_members">>, <<"shardnode_dist_connections">>, <<"shardnode_dist_bytes_total">>,
                <<"shardnode_store_commits_total">>, <<"shardnode_store_commit_latency_seconds">>,
                <<"shardnode_store_commit_errors_total">>, <<"process_cpu_seconds_total">>,
                <<"process_resident_memory_bytes">>, <<"process_open_fds">>, <<"process_start_time_seconds">>],
    [?assertNotEqual(nomatch, binary:match(Page, <<"# TYPE ", F/binary, " ">>), F) || F <- Families],
    %% the two calls were written: at least one commit, its latency timed
    ?assert(value(Page, <<"shardnode_store_writes_total">>) >= 2),
    ?assert(value(Page, <<"shardnode_store_commits_total">>) >= 1),
    ?assert(value(Page, <<"shardnode_store_commit_latency_seconds_count">>) >= 1),
    ?assert(value(Page, <<"process_resident_memory_bytes">>) > 0).

%% Asks and tells by type, entities, members, the reply latency and the
%% distribution's bytes move by what the test did, and no more.
counters_move_as_messages_are_handled(Config) ->
    Port = free_port(),
    {[C], _} = shardnode_ct:start_nodes(Config, [#{config => #{metrics_port => Port}}]),
    {200, _, P0} = get(Port, "/metrics"),
    Asks = <<"shardnode_messages_total{type=\"counter\",kind=\"ask\"}">>,
    Tells = <<"shardnode_messages_total{type=\"counter\",kind=\"tell\"}">>,
    KvAsks = <<"shardnode_messages_total{type=\"kv\",kind=\"ask\"}">>,
    Latency = <<"shardnode_reply_latency_seconds_count{type=\"counter\"}">>,
    Entities = <<"shardnode_entities{type=\"counter\"}">>,
    ?assertEqual(0, value(P0, Asks)),
    ?assertEqual(0, value(P0, Entities)),
    [gen_server:call({counter, C}, {I, incr}) || I <- lists:seq(1, 30)],
    [{counter, C} ! {I, incr} || I <- lists:seq(1, 20)],
    [receive {counter, I, _} -> ok after 5000 -> ct:fail({no_tell_reply, I}) end || I <- lists:seq(1, 20)],
    {200, _, P1} = get(Port, "/metrics"),
    ?assertEqual(30, value(P1, Asks)),
    ?assertEqual(20, value(P1, Tells)),
    ?assertEqual(0, value(P1, KvAsks)),
    ?assertEqual(50, value(P1, Latency)),
    ?assertEqual(30, value(P1, Entities)),
    ?assertEqual(1, value(P1, <<"shardnode_members{status=\"up\"}">>)),
    ?assertEqual(1, value(P1, <<"shardnode_dist_connections{state=\"up\"}">>)),
    ?assert(value(P1, <<"shardnode_dist_bytes_total{direction=\"in\"}">>) >
                value(P0, <<"shardnode_dist_bytes_total{direction=\"in\"}">>)),
    ?assert(value(P1, <<"shardnode_metrics_scrapes_total">>) >= 1).

%% A second member joins: the coordinator on the first moves shards to it,
%% and the first counts hand-offs and their durations.
hand_offs_and_rebalances_are_counted(Config) ->
    PortA = free_port(),
    Opts = #{config => #{number_of_shards => 10, rebalance_interval_ms => 200, heartbeat_interval_ms => 200,
                         failure_timeout_ms => 2000, retry_interval_ms => 200}},
    {[A], Config1} = shardnode_ct:start_nodes(Config, [deep_merge(Opts, #{config => #{metrics_port => PortA}})]),
    [gen_server:call({counter, A}, {I, incr}) || I <- lists:seq(1, 40)],
    {200, _, P0} = get(PortA, "/metrics"),
    ?assertEqual(10, value(P0, <<"shardnode_shards{type=\"counter\"}">>)),
    ?assertEqual(1, value(P0, <<"shardnode_coordinator_active{type=\"counter\"}">>)),
    {[_B], _} = shardnode_ct:start_nodes(Config1, [Opts#{join => [A]}]),
    ok = shardnode_poll:until(
           fun() ->
                   {200, _, P} = get(PortA, "/metrics"),
                   value(P, <<"shardnode_shards{type=\"counter\"}">>) =:= 5
           end, 20000),
    {200, _, P1} = get(PortA, "/metrics"),
    ?assertEqual(2, value(P1, <<"shardnode_members{status=\"up\"}">>)),
    Moved = value(P1, <<"shardnode_handoffs_total{type=\"counter\"}">>),
    ?assert(Moved >= 5),
    ?assertEqual(Moved, value(P1, <<"shardnode_handoff_duration_seconds_count{type=\"counter\"}">>)),
    ?assert(value(P1, <<"shardnode_rebalances_total{type=\"counter\"}">>) >= Moved),
    ?assert(value(P1, <<"shardnode_dist_packets_total{direction=\"out\"}">>) > 0).

%% Malformed and oversized heads get 400 and the connection closes; another
%% path 404, another method 405; pipelined requests are answered in order;
%% the node serves entities throughout and the endpoint counts the 400s.
bad_requests_get_400_and_change_nothing(Config) ->
    Port = free_port(),
    {[C], _} = shardnode_ct:start_nodes(Config, [#{config => #{metrics_port => Port}}]),
    Bad = [<<"GARBAGE\r\n\r\n">>,
           <<"GET metrics HTTP/1.1\r\n\r\n">>,
           <<"GET /metrics HTTP/1.1\n\n">>,
           <<"GET /metrics HTTP/1.1\r\n folded: x\r\n\r\n">>,
           <<"GET /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc">>,
           <<"GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n">>,
           <<22, 3, 1, 2, 0, 1, 0, 1, 252, 3, 3>>,
           <<"GET /metrics HTTP/1.1\r\nX-Big: ", (binary:copy(<<"a">>, 9000))/binary, "\r\n\r\n">>],
    [begin
         {Status, Closed} = raw(Port, Req),
         ?assertEqual({400, closed}, {Status, Closed}, Req)
     end || Req <- Bad],
    ?assertMatch({404, _, _}, get(Port, "/other")),
    ?assertMatch({404, _, _}, get(Port, "/metrics/x")),
    ?assertMatch({405, _, _}, request(Port, <<"DELETE /metrics HTTP/1.1\r\nConnection: close\r\n\r\n">>)),
    {200, _, Query} = get(Port, "/metrics?name[]=shardnode_entities"),
    ?assertNotEqual(nomatch, binary:match(Query, <<"shardnode_entities">>)),
    %% two requests in one packet, on one connection: two answers, in order
    {ok, S} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
    ok = gen_tcp:send(S, <<"GET /nope HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n">>),
    All = recv_all(S, <<>>),
    {match, [[<<"404">>], [<<"200">>]]} = re:run(All, "HTTP/1.1 ([0-9]+)", [global, {capture, all_but_first, binary}]),
    %% HEAD: the headers of the page, no body
    {200, HeadHeaders, <<>>} = request(Port, <<"HEAD /metrics HTTP/1.1\r\nConnection: close\r\n\r\n">>),
    ?assert(binary_to_integer(header(<<"content-length">>, HeadHeaders)) > 1000),
    ?assertEqual(1, gen_server:call({counter, C}, {<<"x">>, incr})),
    {200, _, Page} = get(Port, "/metrics"),
    ?assertEqual(length(Bad), value(Page, <<"shardnode_metrics_bad_requests_total">>)).

%% A client that sends its request one byte a second keeps its own
%% connection busy and nothing else: scrapes and calls go on meanwhile, and
%% the endpoint closes the slow connection when the request timeout (10 s)
%% is up.
a_client_sending_a_byte_a_second_holds_only_itself(Config) ->
    Port = free_port(),
    {[C], _} = shardnode_ct:start_nodes(Config, [#{config => #{metrics_port => Port}}]),
    {ok, Slow} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
    Dribbler = spawn_link(fun() -> dribble(Slow, <<"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n">>) end),
    T0 = erlang:monotonic_time(millisecond),
    Counter = counters:new(1, []),
    %% until the endpoint closes the slow connection, other scrapes and
    %% calls are served, each in well under the slow request's pace
    ok = shardnode_poll:until(
           fun() ->
                   {T, {200, _, _}} = timer:tc(fun() -> get(Port, "/metrics") end),
                   ?assert(T < 1000000),
                   counters:add(Counter, 1, 1),
                   N = counters:get(Counter, 1),
                   ?assertEqual(N, gen_server:call({counter, C}, {<<"slow">>, incr})),
                   Dribbler ! {closed_yet, self()},
                   receive {closed, Bool} -> Bool after 1000 -> false end
           end, 15000),
    Took = erlang:monotonic_time(millisecond) - T0,
    Served = counters:get(Counter, 1),
    ct:log("the slow connection was closed after ~b ms; ~b scrapes and calls meanwhile", [Took, Served]),
    ?assert(Took >= 9000),
    ?assert(Served >= 10),
    %% scrapes within a millisecond share a page: a later one shows the last call
    ok = sn_test:await(fun() ->
                               {200, _, Page} = get(Port, "/metrics"),
                               Served =:= value(Page, <<"shardnode_messages_total{type=\"counter\",kind=\"ask\"}">>)
                       end, 5000).

%% A thousand clients scrape at once while calls go on: every scrape gets
%% the whole page, every call its reply, and the renderings are shared.
a_thousand_scrapers_at_once(Config) ->
    Port = free_port(),
    {[C], _} = shardnode_ct:start_nodes(Config, [#{config => #{metrics_port => Port}}]),
    Self = self(),
    N = 1000,
    Caller = spawn_link(fun() -> calls(C, 0, Self) end),
    Pids = [spawn_link(fun() -> Self ! {scraped, self(), get(Port, "/metrics", 30000)} end)
            || _ <- lists:seq(1, N)],
    Results = [receive {scraped, P, R} -> R after 60000 -> ct:fail(scraper_stuck) end || P <- Pids],
    Caller ! stop,
    Calls = receive {calls, K} -> K after 10000 -> ct:fail(caller_stuck) end,
    Statuses = lists:usort([S || {S, _, _} <- Results]),
    ?assertEqual([200], Statuses),
    [?assertNotEqual(nomatch, binary:match(B, <<"process_start_time_seconds">>)) || {_, _, B} <- Results],
    ct:log("~b calls answered while ~b scrapes ran", [Calls, N]),
    ?assert(Calls > 0),
    %% a page rendered after them all counts them all
    ok = shardnode_poll:until(
           fun() ->
                   {200, _, Page} = get(Port, "/metrics"),
                   value(Page, <<"shardnode_metrics_scrapes_total">>) >= N andalso
                       value(Page, <<"shardnode_messages_total{type=\"counter\",kind=\"ask\"}">>) =:= Calls
           end, 5000),
    {200, _, Last} = get(Port, "/metrics"),
    Renders = value(Last, <<"shardnode_metrics_renders_total">>),
    ct:log("~b renderings for ~b scrapes", [Renders, value(Last, <<"shardnode_metrics_scrapes_total">>)]),
    ?assert(Renders =< value(Last, <<"shardnode_metrics_scrapes_total">>)).

%% shardnode_info carries the log level, which set_log_level changes; a
%% node without metrics_port listens on no HTTP port.
the_log_level_shows_and_metrics_off_means_no_port(Config) ->
    Port = free_port(),
    {[C, D], _} = shardnode_ct:start_nodes(Config, [#{config => #{metrics_port => Port}}, #{}]),
    {200, _, P0} = get(Port, "/metrics"),
    Info = <<"shardnode_info{node=\"", (atom_to_binary(C))/binary, "\",log_level=\"info\",version=\"">>,
    ?assertNotEqual(nomatch, binary:match(P0, Info)),
    ok = gen_server:call({shardnode, C}, {set_log_level, debug}),
    %% scrapes within a millisecond share a page: the next one shows it
    ok = sn_test:await(fun() ->
                               {200, _, P1} = get(Port, "/metrics"),
                               nomatch =/= binary:match(P1, <<"log_level=\"debug\",version=\"">>)
                       end),
    %% a node without metrics_port says nothing of metrics
    {ok, Lines} = shardnode:output(D),
    ?assertEqual([], [L || L <- Lines, binary:match(L, <<"metrics">>) =/= nomatch]),
    {ok, CLines} = shardnode:output(C),
    ?assertMatch([_], [L || L <- CLines, binary:match(L, <<"metrics on port">>) =/= nomatch]),
    %% the log's first line says what the node runs, the metrics port with it
    [First | _] = CLines,
    Says = <<" starting: types counter,kv,echo; store memory; TLS off; metrics port ",
             (integer_to_binary(Port))/binary, "; seeds none">>,
    ?assertNotEqual(nomatch, binary:match(First, Says), First).

%% Every query of docs/grafana-dashboard.json parses as PromQL (promtool
%% check rules, with Grafana's variables given values) and names only
%% metrics the page has.
the_dashboard_queries_are_promql(Config) ->
    {ok, Json} = file:read_file(filename:join([test_plugins:project_root(), "docs", "grafana-dashboard.json"])),
    {match, Found} = re:run(Json, "\"expr\": \"((?:[^\"\\\\]|\\\\.)*)\"",
                            [global, {capture, all_but_first, binary}]),
    Exprs = [json_unescape(E) || [E] <- Found],
    ?assert(length(Exprs) >= 10),
    Vars = [{<<"$__rate_interval">>, <<"1m">>}, {<<"$instance">>, <<".*">>}, {<<"$job">>, <<".*">>}],
    Concrete = [lists:foldl(fun({V, X}, Acc) -> binary:replace(Acc, V, X, [global]) end, E, Vars)
                || E <- Exprs],
    Rules = ["groups:\n- name: dashboard\n  rules:\n",
             [io_lib:format("  - record: dashboard:q~b\n    expr: '~ts'\n", [K, E])
              || {K, E} <- lists:zip(lists:seq(1, length(Concrete)), Concrete)]],
    File = filename:join(?config(priv_dir, Config), "dashboard_rules.yml"),
    ok = file:write_file(File, Rules),
    Out = os:cmd(?config(promtool, Config) ++ " check rules " ++ File ++ " 2>&1; echo rc=$?"),
    ct:log("~ts", [Out]),
    ?assertNotEqual(nomatch, string:find(Out, "rc=0")),
    %% the metrics named are the page's (a node with a store has them all)
    Port = free_port(),
    DataDir = filename:join(?config(priv_dir, Config), "lmdb_dash"),
    {[_], _} = shardnode_ct:start_nodes(Config, [#{config => #{metrics_port => Port, state_store => lmdb,
                                                               data_dir => DataDir}}]),
    {200, _, Page} = get(Port, "/metrics"),
    {match, Names} = re:run(iolist_to_binary(Exprs), "(?:shardnode|process)_[a-z_]+",
                            [global, {capture, first, binary}]),
    [?assertNotEqual(nomatch, binary:match(Page, <<N/binary>>), N) || [N] <- lists:usort(Names)].

%%====================================================================
%% Helpers

json_unescape(<<"\\\"", R/binary>>) -> <<"\"", (json_unescape(R))/binary>>;
json_unescape(<<"\\\\", R/binary>>) -> <<"\\", (json_unescape(R))/binary>>;
json_unescape(<<C, R/binary>>) -> <<C, (json_unescape(R))/binary>>;
json_unescape(<<>>) -> <<>>.
%% docs/contract.md "Health": B is started with a seed that is not there
%% yet, so it stays joining: live 200, ready 503 saying why. Once the seed
%% starts and B is admitted, ready turns 200 (B an up member, its regions
%% registered). Another path under /health is 404, and a POST 405.
ready_turns_200_once_the_node_has_joined(Config) ->
    PortB = free_port(),
    A = list_to_atom(shardnode_ct:unique_name("seed") ++ "@127.0.0.1"),
    {[B], Config1} = shardnode_ct:start_nodes(Config, [#{join => [A], config => #{metrics_port => PortB}}]),
    {200, _, <<"ok\n">>} = get(PortB, "/health/live"),
    {503, Headers, Why} = get(PortB, "/health/ready"),
    ?assertEqual(<<"text/plain; charset=utf-8">>, header(<<"content-type">>, Headers)),
    ?assertEqual(<<"not an up member: joining\n">>, Why),
    {404, _, _} = get(PortB, "/health"),
    {405, _, _} = request(PortB, <<"POST /health/ready HTTP/1.1\r\nConnection: close\r\n\r\n">>),
    {[A], _} = shardnode_ct:start_nodes(Config1, [#{name => A}]),
    sn_test:await(fun() -> element(1, get(PortB, "/health/ready")) =:= 200 end, 20000),
    {200, _, <<"ok\n">>} = get(PortB, "/health/ready"),
    ?assertEqual([A, B], shardnode_ct:members(B)),
    %% the probes are not counted as scrapes (the first page is rendered
    %% before it is counted)
    {200, _, Page} = get(PortB, "/metrics"),
    ?assertEqual(0, value(Page, <<"shardnode_metrics_scrapes_total">>)).

%%====================================================================

%% A port free now (the node binds it a moment later).
%% Nothing sent to a node vanishes without a trace: a message a region
%% cannot route, and one to a name nobody has, are counted by reason on the
%% page, and the first of each reason is in the node's log with what it
%% was; the next ones only in a count.
unroutable_messages_are_logged_once_and_counted(Config) ->
    Port = free_port(),
    {[C], _} = shardnode_ct:start_nodes(Config, [#{config => #{metrics_port => Port}}]),
    [{counter, C} ! {garbage, K, 1} || K <- lists:seq(1, 5)],
    {counter, C} ! garbage,
    ok = gen_server:cast({counter, C}, not_a_pair),
    {no_such_name, C} ! hello,
    {no_such_name, C} ! hello,
    {shardnode, C} ! not_a_call,
    %% answered after all of the above, sent on the same connection
    ?assertEqual(1, gen_server:call({counter, C}, {a, incr})),
    {200, _, Page} = get(Port, "/metrics"),
    Series = fun(Labels) -> iolist_to_binary(["shardnode_unroutable_messages_total{type=\"counter\",", Labels, "}"]) end,
    ?assertEqual(6, value(Page, Series("reason=\"not_entity_message\""))),
    ?assertEqual(1, value(Page, Series("reason=\"bad_cast\""))),
    ?assertEqual(7, value(Page, <<"shardnode_dropped_messages_total{type=\"counter\"}">>)),
    ?assertEqual(2, value(Page, <<"shardnode_undeliverable_messages_total{reason=\"unknown_name\"}">>)),
    ?assertEqual(1, value(Page, <<"shardnode_admin_dropped_messages_total{reason=\"not_a_call\"}">>)),
    {ok, Lines} = shardnode:output(C),
    Said = fun(Text) -> [L || L <- Lines, binary:match(L, Text) =/= nomatch] end,
    [First] = Said(<<"a message that is not {EntityId, Msg}: dropped">>),
    ?assertNotEqual(nomatch, binary:match(First, <<"{garbage,1,1}">>)),
    ?assertMatch([_], Said(<<"a cast that is not {EntityId, Msg}: dropped">>)),
    ?assertMatch([_], Said(<<"to the name no_such_name">>)),
    ?assertMatch([_], Said(<<"shardnode: a message that is no '$gen_call': dropped">>)),
    ok.

%% A call reaches B, a proxy-only member, while the coordinator's member A
%% is paused: it waits in B's buffer for its shard's home, then B forwards
%% it to A. A's reply latency counts from A's arrival (fast); its whole
%% time, shardnode_message_duration_seconds, counts from B's arrival, the
%% wait included.
the_whole_time_counts_waits_on_the_member_that_forwarded(Config) ->
    PortA = free_port(),
    {[A], Config1} = shardnode_ct:start_nodes(Config, [#{config => #{metrics_port => PortA}}]),
    {[B], _} = shardnode_ct:start_nodes(Config1, [#{join => [A], proxy_only => true}]),
    ok = sn_test:await(fun() -> {ok, A} =:= shardnode:coordinator(B, counter) end),
    ?assertEqual(1, gen_server:call({counter, B}, {warm, incr})),
    ok = shardnode_ct:pause(A),
    Self = self(),
    Caller = spawn_link(fun() -> Self ! {self(), gen_server:call({counter, B}, {<<"waits">>, incr}, 10000)} end),
    %% it is in B's buffer
    ok = sn_test:await(fun() ->
                               case gen_server:call({counter, B}, get_region_stats) of
                                   {ok, #{buffered := 1}} -> true;
                                   _ -> false
                               end
                       end),
    timer:sleep(700), % the wait measured; nothing is polled for
    ok = shardnode_ct:resume(A),
    receive {Caller, Reply} -> ?assertEqual(1, Reply) after 10000 -> ct:fail(no_reply) end,
    {200, _, Page} = get(PortA, "/metrics"),
    Bucket = fun(Family, Le) ->
                     value(Page, iolist_to_binary([Family, "_bucket{type=\"counter\",le=\"", Le, "\"}"]))
             end,
    Count = fun(Family) -> value(Page, iolist_to_binary([Family, "_count{type=\"counter\"}"])) end,
    ?assertEqual(2, Count(<<"shardnode_message_duration_seconds">>)),
    ?assertEqual(1, Bucket(<<"shardnode_message_duration_seconds">>, "0.5")),
    ?assertEqual(2, Count(<<"shardnode_reply_latency_seconds">>)),
    ?assertEqual(2, Bucket(<<"shardnode_reply_latency_seconds">>, "0.25")),
    ok.

%% shardnode_info carries the version of the application (its vsn) and
%% the protocol the node speaks to other members, as the admin's
%% sys:get_state does (there, for every member it lists).
the_info_carries_the_version(Config) ->
    Port = free_port(),
    {[C], _} = shardnode_ct:start_nodes(Config, [#{config => #{metrics_port => Port}}]),
    {ok, Vsn} = application:get_key(shardnode, vsn),
    {200, _, Page} = get(Port, "/metrics"),
    Info = iolist_to_binary(["shardnode_info{node=\"", atom_to_list(C), "\",log_level=\"info\",version=\"",
                             Vsn, "\",protocol=\"2\"}"]),
    ?assertEqual(1, value(Page, Info)),
    ?assertMatch(#{version := Vsn, protocols := #{C := 2}}, sys:get_state({shardnode, C}, 1000)),
    ok.

free_port() -> shardnode_ct:free_port().

get(Port, Path) -> get(Port, Path, 5000).

get(Port, Path, Timeout) ->
    request(Port, iolist_to_binary(["GET ", Path, " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"]),
            Timeout).

request(Port, Req) -> request(Port, Req, 5000).

%% Sends Req on a new connection and reads until the server closes it:
%% {Status, [{LowerName, Value}], Body}.
request(Port, Req, Timeout) ->
    {ok, S} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}], Timeout),
    ok = gen_tcp:send(S, Req),
    All = recv_all(S, <<>>, Timeout),
    [Head, Body] = binary:split(All, <<"\r\n\r\n">>),
    [StatusLine | HeaderLines] = binary:split(Head, <<"\r\n">>, [global]),
    <<"HTTP/1.1 ", Code:3/binary, _/binary>> = StatusLine,
    Headers = [begin
                   [K, V] = binary:split(L, <<": ">>),
                   {string:lowercase(K), V}
               end || L <- HeaderLines],
    Length = binary_to_integer(header(<<"content-length">>, Headers)),
    ?assert(byte_size(Body) =:= Length orelse Length > 0 andalso byte_size(Body) =:= 0),
    {binary_to_integer(Code), Headers, Body}.

%% Sends a request that should be refused: its status, and whether the
%% server closed the connection after.
raw(Port, Req) ->
    {ok, S} = gen_tcp:connect({127, 0, 0, 1}, Port, [binary, {active, false}]),
    _ = gen_tcp:send(S, Req),
    All = recv_all(S, <<>>),
    <<"HTTP/1.1 ", Code:3/binary, _/binary>> = All,
    {binary_to_integer(Code), closed}.

recv_all(S, Acc) -> recv_all(S, Acc, 5000).

recv_all(S, Acc, Timeout) ->
    case gen_tcp:recv(S, 0, Timeout) of
        {ok, Data} -> recv_all(S, <<Acc/binary, Data/binary>>, Timeout);
        {error, closed} -> gen_tcp:close(S), Acc;
        {error, Why} -> ct:fail({recv, Why, Acc})
    end.

header(Name, Headers) ->
    {Name, V} = lists:keyfind(Name, 1, Headers),
    V.

%% The value of the sample whose name and labels are exactly Series.
value(Page, Series) ->
    case shardnode_ct:metric_value(Page, Series) of
        undefined -> ct:fail({no_series, Series});
        V -> V
    end.

%% Sends Req one byte a second on S; answers {closed_yet, From} with
%% whether the server has closed S.
dribble(S, Req) ->
    dribble_loop(S, Req, false).

dribble_loop(S, Req, Closed) ->
    receive
        {closed_yet, From} ->
            Closed1 = Closed orelse peer_closed(S),
            From ! {closed, Closed1},
            dribble_loop(S, Req, Closed1)
    after 1000 ->
            case {Closed, Req} of
                {false, <<B, Rest/binary>>} ->
                    case gen_tcp:send(S, <<B>>) of
                        ok -> dribble_loop(S, Rest, false);
                        {error, _} -> dribble_loop(S, Rest, true)
                    end;
                _ ->
                    dribble_loop(S, Req, Closed)
            end
    end.

peer_closed(S) ->
    case gen_tcp:recv(S, 0, 0) of
        {error, timeout} -> false;
        {error, _} -> true;
        {ok, _} -> false
    end.

calls(C, N, Parent) ->
    receive
        stop -> Parent ! {calls, N}
    after 0 ->
            N1 = N + 1,
            N1 = gen_server:call({counter, C}, {<<"busy">>, incr}, 10000),
            calls(C, N1, Parent)
    end.

deep_merge(A, B) ->
    maps:merge_with(fun(_, X, Y) when is_map(X), is_map(Y) -> maps:merge(X, Y); (_, _, Y) -> Y end, A, B).
