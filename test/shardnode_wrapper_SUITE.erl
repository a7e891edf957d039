%% The wrapper as a user's project meets it (docs/contract.md "Adoption"):
%% a clear error on a VM that is not distributed, the C node's log lines in
%% logger (at debug, but for its warnings and errors), entity types of the
%% user's own loaded from a directory of theirs (plugin_dir), and a node
%% under a supervisor of the user's (shardnode:child_spec/1).
-module(shardnode_wrapper_SUITE).
-behaviour(supervisor).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-import(sn_test, [stop_supervisor/1]).

-export([suite/0, all/0, init_per_suite/1, end_per_suite/1, end_per_testcase/2]).
-export([a_vm_that_is_not_distributed_gets_a_clear_error/1,
         node_log_lines_are_debug_but_warnings_and_errors/1,
         types_of_the_users_own_load_from_plugin_dir/1,
         a_plugin_dir_that_cannot_be_read_is_refused/1,
         the_log_level_changes_at_run_time/1,
         a_node_under_a_supervisor_of_the_users_is_restarted/1]).
%% logger handler callback: the captured events go to the test process
-export([log/2]).
%% supervisor callback: the user's own supervisor
-export([init/1]).

suite() -> [{timetrap, {minutes, 2}}].

all() ->
    [a_vm_that_is_not_distributed_gets_a_clear_error,
     node_log_lines_are_debug_but_warnings_and_errors,
     types_of_the_users_own_load_from_plugin_dir,
     a_plugin_dir_that_cannot_be_read_is_refused,
     the_log_level_changes_at_run_time,
     a_node_under_a_supervisor_of_the_users_is_restarted].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Config.

end_per_suite(_Config) ->
    ?assertEqual([], shardnode:which_nodes()),
    ok.

end_per_testcase(_Case, Config) ->
    _ = logger:remove_handler(capture),
    ok = logger:set_primary_config(level, notice),
    ok = logger:unset_module_level(shardnode_node),
    shardnode_ct:stop_nodes(Config, shardnode:which_nodes()).

%%====================================================================
%% Cases
%%====================================================================

%% A VM started without -name or -sname: start_node says why it cannot
%% work, and starts nothing.
a_vm_that_is_not_distributed_gets_a_clear_error(_Config) ->
    Ebin = filename:dirname(code:which(shardnode)),
    {ok, P, nonode@nohost} = peer:start_link(#{connection => standard_io, args => ["-pa", Ebin]}),
    try
        Name = shardnode_ct:unique_name("nd") ++ "@127.0.0.1",
        ?assertMatch({error, {not_distributed, _}},
                     peer:call(P, shardnode, start_node, [#{name => Name}])),
        ?assertEqual([], peer:call(P, shardnode, which_nodes, [])),
        ?assert(shardnode_ct:gone(list_to_atom(Name)))
    after
        peer:stop(P)
    end.

%% The node's info record that it is up reaches logger at debug, its
%% warning that a seed cannot be reached at warning, each as `Node: Msg'
%% (without the node's own timestamp and level), in the domain
%% [shardnode, node] with the node's name as metadata. With the primary
%% level above debug, shardnode_node's module level lets the debug events
%% through. A node whose store cannot be opened says so at error.
node_log_lines_are_debug_but_warnings_and_errors(Config) ->
    ok = logger:set_primary_config(level, all),
    ok = logger:add_handler(capture, ?MODULE,
                            #{config => #{pid => self()}, level => all, filter_default => stop,
                              filters => [{node, {fun logger_filters:domain/2, {log, sub, [shardnode, node]}}}]}),
    %% a join to a node that is not there: the node says it cannot reach it
    %% (a debug event: at first a seed may just be starting), then warns
    %% once it has kept failing
    {[C], _} = shardnode_ct:start_nodes(Config, [#{join => ['nobody@127.0.0.1']}]),
    CBin = atom_to_binary(C),
    {UpLevel, Up, UpMeta} = await_log(fun(Text) -> match(Text, <<": node ", CBin/binary, " up: port">>) end),
    ?assertEqual(debug, UpLevel),
    ?assertMatch({match, _}, re:run(Up, ["^", atom_to_list(C), ": node "])),
    ?assertMatch(#{domain := [shardnode, node], shardnode := C}, UpMeta),
    {FirstLevel, _, _} = await_log(fun(Text) -> match(Text, <<"cannot reach nobody@127.0.0.1 (">>) end),
    ?assertEqual(debug, FirstLevel),
    {WarnLevel, Warn, WarnMeta} = await_log(fun(Text) -> match(Text, <<"since this node started">>) end),
    ?assertEqual(warning, WarnLevel),
    ?assertMatch({match, _}, re:run(Warn, ["^", atom_to_list(C), ": cannot reach "])),
    ?assertMatch(#{domain := [shardnode, node], shardnode := C}, WarnMeta),
    %% the primary level as an Erlang VM has it by default, and the node's
    %% debug events let through by the module level alone
    ok = logger:set_primary_config(level, notice),
    ok = logger:set_module_level(shardnode_node, debug),
    ?assertEqual(ok, gen_server:call({shardnode, C}, {set_log_level, debug})),
    {Level, _, _} = await_log(fun(Text) -> match(Text, <<": log level debug (was info)">>) end),
    ?assertEqual(debug, Level),
    %% a connection string libpq refuses: the node cannot open its store,
    %% says so, and exits
    Bad = shardnode_ct:unique_name("err") ++ "@127.0.0.1",
    ?assertMatch({error, {exited, _, _}},
                 shardnode:start_node(#{name => Bad, config => #{state_store => postgres,
                                                                 postgres_conninfo => "nonsense=1"}})),
    {ErrorLevel, _, _} = await_log(fun(Text) -> match(Text, <<": cannot open the entity state store">>) end),
    ?assertEqual(error, ErrorLevel).

%% A plugin built into a directory of the user's is hosted beside the
%% built-in types and priv/'s plugins; a plugin there named like a built-in
%% type is skipped with a warning, and the built-in type stays.
types_of_the_users_own_load_from_plugin_dir(Config) ->
    Dir = filename:join(?config(priv_dir, Config), "my_plugins"),
    ok = test_plugins:build(Dir, my_type),
    ok = test_plugins:build(Dir, echo),
    {[C], _} = shardnode_ct:start_nodes(Config, [#{types => [counter, echo, my_type],
                                                   config => #{plugin_dir => Dir}}]),
    ?assertEqual({my_type, {hello, 1}}, gen_server:call({my_type, C}, {<<"a">>, {hello, 1}})),
    ?assertEqual(1, gen_server:call({counter, C}, {<<"a">>, incr})),
    %% the built-in echo answers Msg itself, not {echo, Msg}
    ?assertEqual({hello, 2}, gen_server:call({echo, C}, {<<"a">>, {hello, 2}})),
    {ok, Lines} = shardnode:output(C),
    ?assert(lists:any(fun(L) -> binary:match(L, [<<"echo.so skipped">>]) =/= nomatch end, Lines)).

%% A plugin_dir that is not there stops the node at start, exit status 2,
%% with one line naming it: a type the user meant to host is not missed
%% silently.
a_plugin_dir_that_cannot_be_read_is_refused(Config) ->
    Dir = filename:join(?config(priv_dir, Config), "not_there"),
    Name = shardnode_ct:unique_name("pd") ++ "@127.0.0.1",
    {error, {exited, 2, Lines}} = shardnode:start_node(#{name => Name, config => #{plugin_dir => Dir}}),
    ?assert(lists:any(fun(L) -> binary:match(L, <<"plugin_dir ">>) =/= nomatch andalso
                                    binary:match(L, list_to_binary(Dir)) =/= nomatch
                      end, Lines)),
    ?assert(shardnode_ct:gone(list_to_atom(Name))).

%% A supervisor of the user's runs a node from shardnode:child_spec/1: the
%% node answers, and the wrapper's functions find it by name; killed with
%% kill -9, or stopped with shardnode:stop_node/1, it is started again and
%% answers again; the supervisor's shutdown stops it, and it is gone.
a_node_under_a_supervisor_of_the_users_is_restarted(_Config) ->
    ?assertError({bad_start_opts, missing_name}, shardnode:child_spec(#{types => [counter]})),
    Name = shardnode_ct:unique_name("sup") ++ "@127.0.0.1",
    C = list_to_atom(Name),
    Spec = shardnode:child_spec(#{name => Name, types => [counter]}),
    ?assertMatch(#{id := {shardnode, C}, start := {shardnode, start_link, [_]}, restart := permanent,
                   shutdown := 20000, type := worker, modules := [shardnode_node]}, Spec),
    {ok, Sup} = supervisor:start_link(?MODULE, [Spec]),
    try
        ?assertEqual({ok, [counter]}, gen_server:call({shardnode, C}, shard_types)),
        ?assertEqual(1, gen_server:call({counter, C}, {<<"a">>, incr})),
        ?assertEqual([C], shardnode:which_nodes()),
        ?assertMatch({ok, [_ | _]}, shardnode:output(C)),
        [{{shardnode, C}, Server1, worker, [shardnode_node]}] = supervisor:which_children(Sup),
        {ok, OsPid1} = shardnode:os_pid(C),
        [] = os:cmd("kill -9 " ++ integer_to_list(OsPid1)),
        OsPid2 = await_restart(C, OsPid1),
        [{_, Server2, _, _}] = supervisor:which_children(Sup),
        ?assertNotEqual(Server1, Server2),
        %% a node started afresh: the memory store kept nothing
        ?assertEqual(1, gen_server:call({counter, C}, {<<"a">>, incr})),
        ?assertEqual(ok, shardnode:stop_node(C)),
        _ = await_restart(C, OsPid2),
        ?assertEqual([C], shardnode:which_nodes())
    after
        stop_supervisor(Sup)
    end,
    sn_test:await(fun() -> shardnode_ct:gone(C) end),
    ?assertEqual([], shardnode:which_nodes()).

%% {set_log_level, Level} takes effect at once: debug records appear, then
%% none below error; a level that is none is refused; every line the node
%% wrote is a logfmt record the wrapper reads back whole.
the_log_level_changes_at_run_time(Config) ->
    {[C], _} = shardnode_ct:start_nodes(Config, [#{types => [counter]}]),
    Admin = {shardnode, C},
    ?assertEqual({ok, info}, gen_server:call(Admin, log_level)),
    %% an exit signal to the admin: ignored (it traps exits), said at debug
    {status, AdminPid, _, _} = sys:get_status(Admin),
    exit(AdminPid, not_now_1),
    ?assertEqual(ok, gen_server:call(Admin, {set_log_level, debug})),
    ?assertEqual({ok, debug}, gen_server:call(Admin, log_level)),
    exit(AdminPid, not_now_2),
    ok = shardnode_poll:until(fun() -> count(C, <<"level=debug">>) >= 1 end, 5000),
    ?assertEqual(1, count(C, <<"level=info node=", (atom_to_binary(C))/binary, " msg=\"log level debug (was info)\"">>)),
    ?assertEqual(ok, gen_server:call(Admin, {set_log_level, error})),
    Debug = count(C, <<"level=debug">>),
    exit(AdminPid, not_now_3),
    ?assertEqual(1, gen_server:call({counter, C}, {<<"a">>, incr})),
    ?assertEqual({ok, error}, gen_server:call(Admin, log_level)),
    ?assertEqual(Debug, count(C, <<"level=debug">>)),
    ?assertEqual({error, {bad_log_level, loud}}, gen_server:call(Admin, {set_log_level, loud})),
    ?assertEqual({error, {bad_log_level, warn}}, gen_server:call(Admin, {set_log_level, warn})),
    ?assertMatch({error, {bad_request, _}}, gen_server:call(Admin, {set_log_level, "debug"})),
    ?assertEqual(ok, gen_server:call(Admin, {set_log_level, warning})),
    %% every line is a record: level, node, msg, and type where it applies
    {ok, Lines} = shardnode:output(C),
    [?assertMatch({L, _, _} when L =/= undefined, shardnode_node:parse_record(Line)) || Line <- Lines],
    [?assertMatch({match, _}, re:run(Line, "^ts=[0-9-]+T[0-9:.]+Z level=[a-z]+ node=[^ ]+ msg=\"", []))
     || Line <- Lines],
    ?assert(lists:any(fun(Line) -> {_, _, Meta} = shardnode_node:parse_record(Line),
                                   maps:get(shardnode_type, Meta, none) =:= counter
                      end, Lines)).

%%====================================================================
%% Helpers

count(Node, Text) ->
    {ok, Lines} = shardnode:output(Node),
    length([L || L <- Lines, binary:match(L, Text) =/= nomatch]).

%% Waits until Node runs in an OS process other than OldOsPid and answers
%% its admin; returns the new OS pid.
await_restart(Node, OldOsPid) ->
    Answers = fun() ->
                      case shardnode:os_pid(Node) of
                          {ok, OsPid} when OsPid =/= OldOsPid ->
                              (catch gen_server:call({shardnode, Node}, shard_types, 1000)) =:= {ok, [counter]};
                          _ ->
                              false
                      end
              end,
    sn_test:await(Answers),
    {ok, OsPid} = shardnode:os_pid(Node),
    OsPid.

%% The user's supervisor, of the children given.
init(Children) ->
    {ok, {#{strategy => one_for_one, intensity => 5, period => 10}, Children}}.

%%====================================================================

log(#{level := Level, msg := Msg, meta := Meta}, #{config := #{pid := Pid}}) ->
    Text = case Msg of
               {string, S} -> S;
               {report, R} -> io_lib:format("~0tp", [R]);
               {Format, Args} -> io_lib:format(Format, Args)
           end,
    Pid ! {captured, Level, unicode:characters_to_binary(Text), Meta},
    ok.

%% The level, text and metadata of the first captured event whose text
%% Pred accepts, within 10 s.
await_log(Pred) ->
    receive
        {captured, Level, Text, Meta} ->
            case Pred(Text) of
                true -> {Level, Text, Meta};
                false -> await_log(Pred)
            end
    after 10000 ->
            ct:fail(no_such_log_event)
    end.

match(Text, Part) ->
    binary:match(Text, Part) =/= nomatch.
