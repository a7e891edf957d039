%% The wrapper as a user's project meets it (docs/contract.md "Adoption"):
%% a clear error on a VM that is not distributed, and the C node's log
%% lines in logger at the levels the node gave them.
-module(shardnode_wrapper_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([suite/0, all/0, init_per_suite/1, end_per_suite/1, end_per_testcase/2]).
-export([a_vm_that_is_not_distributed_gets_a_clear_error/1,
         node_log_lines_keep_their_level/1]).
%% logger handler callback: the captured events go to the test process
-export([log/2]).

suite() -> [{timetrap, {minutes, 2}}].

all() ->
    [a_vm_that_is_not_distributed_gets_a_clear_error,
     node_log_lines_keep_their_level].

init_per_suite(Config) ->
    {ok, _} = application:ensure_all_started(shardnode),
    Config.

end_per_suite(_Config) ->
    ?assertEqual([], shardnode:which_nodes()),
    ok.

end_per_testcase(_Case, Config) ->
    _ = logger:remove_handler(capture),
    ok = logger:set_primary_config(level, notice),
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

%% The node's INFO line that it is up reaches logger as info, its WARN
%% lines as warning, each without the node's own timestamp, in the domain
%% [shardnode, node].
node_log_lines_keep_their_level(Config) ->
    ok = logger:set_primary_config(level, all),
    ok = logger:add_handler(capture, ?MODULE,
                            #{config => #{pid => self()}, level => all, filter_default => stop,
                              filters => [{node, {fun logger_filters:domain/2, {log, sub, [shardnode, node]}}}]}),
    %% a join to a node that is not there: the node warns that it cannot reach it
    {[C], _} = shardnode_ct:start_nodes(Config, [#{join => ['nobody@127.0.0.1']}]),
    Up = await_log(fun(info, Text) -> match(Text, <<": node ", (atom_to_binary(C))/binary, " up: port">>);
                      (_, _) -> false
                   end),
    ?assertEqual(nomatch, re:run(Up, "^(INFO|[0-9][0-9]:)")),
    ?assertMatch({match, _}, re:run(Up, ["^", atom_to_list(C), ": node "])),
    Warn = await_log(fun(warning, Text) -> match(Text, <<"nobody@127.0.0.1">>);
                        (_, _) -> false
                     end),
    ?assertEqual(nomatch, re:run(Warn, "^WARN")).

%%====================================================================
%% Helpers
%%====================================================================

log(#{level := Level, msg := Msg}, #{config := #{pid := Pid}}) ->
    Text = case Msg of
               {string, S} -> S;
               {report, R} -> io_lib:format("~0tp", [R]);
               {Format, Args} -> io_lib:format(Format, Args)
           end,
    Pid ! {captured, Level, unicode:characters_to_binary(Text)},
    ok.

%% The text of the first captured event that Pred accepts, within 10 s.
await_log(Pred) ->
    receive
        {captured, Level, Text} ->
            case Pred(Level, Text) of
                true -> Text;
                false -> await_log(Pred)
            end
    after 10000 ->
            ct:fail(no_such_log_event)
    end.

match(Text, Part) ->
    binary:match(Text, Part) =/= nomatch.
