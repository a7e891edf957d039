%% The command line of a C node (shardnode_args): which argv each start
%% option gives, in which order, and which options are refused. No node is
%% started: every case only builds commands, so the suite takes well under
%% a second.
%%
%%   rebar3 ct --dir test --suite shardnode_args_SUITE
-module(shardnode_args_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, init_per_suite/1, end_per_suite/1]).

-export([long_name/1,
         short_name/1,
         every_option_in_order/1,
         config_values/1,
         default_cookie/1,
         default_executable/1,
         netns/1,
         refused/1,
         redact/1]).

all() ->
    [long_name, short_name, every_option_in_order, config_values, default_cookie,
     default_executable, netns, refused, redact].

%% An executable of our own, so that the cases do not depend on where
%% priv/shardnode was built.
init_per_suite(Config) ->
    Exe = filename:join(?config(priv_dir, Config), "fake_shardnode"),
    ok = file:write_file(Exe, "#!/bin/sh\nexit 0\n"),
    ok = file:change_mode(Exe, 8#755),
    [{exe, Exe} | Config].

end_per_suite(_Config) ->
    ok.

%%====================================================================
%% Cases
%%====================================================================

%% The example of the module's documentation; this node has long names, so
%% the node is checked with a ping.
long_name(Config) ->
    {ok, Cmd} = command(Config, #{name => "c1@127.0.0.1", cookie => secret,
                                  config => #{number_of_shards => 10}}),
    ?assertEqual(#{node => 'c1@127.0.0.1',
                   executable => ?config(exe, Config),
                   args => ["--name", "c1@127.0.0.1", "--stop-on-stdin-eof",
                            "--cookie", "secret", "--set", "number_of_shards=10"],
                   check => ping,
                   ready_timeout => 10000,
                   entities => #{}},
                 Cmd).

%% A short name without a host gets this host's short name; a long-named
%% node cannot ping it, so it is ready when it is in epmd.
short_name(Config) ->
    {ok, Host} = inet:gethostname(),
    Short = hd(string:split(Host, ".")),
    {ok, #{node := Node, args := Args, check := Check}} =
        command(Config, #{sname => c1, cookie => "k"}),
    ?assertEqual(list_to_atom("c1@" ++ Short), Node),
    ?assertEqual(["--sname", "c1", "--stop-on-stdin-eof", "--cookie", "k"], Args),
    ?assertEqual({epmd, "c1"}, Check),
    {ok, #{node := 'c2@somehost', args := ["--sname", "c2@somehost" | _]}} =
        command(Config, #{sname => <<"c2@somehost">>}).

every_option_in_order(Config) ->
    {ok, #{args := Args, ready_timeout := 2500}} =
        command(Config, #{name => 'c1@127.0.0.1',
                          cookie_file => "/tmp/cookie",
                          port => 4370,
                          join => ['a@127.0.0.1', "b@127.0.0.1"],
                          types => [counter, kv],
                          entities => #{tally => sn_tally, cart => sn_cart},
                          proxy_only => true,
                          singletons => [{ledger, counter}, {boss, kv}],
                          config_file => <<"/etc/sn.config">>,
                          config => #{number_of_shards => 10, data_dir => "/tmp/sn"},
                          extra_args => ["--verbose", <<"x">>],
                          ready_timeout => 2500}),
    ?assertEqual(["--name", "c1@127.0.0.1",
                  "--stop-on-stdin-eof",
                  "--cookie-file", "/tmp/cookie",
                  "--port", "4370",
                  "--join", "a@127.0.0.1,b@127.0.0.1",
                  "--types", "counter,kv",
                  "--host", atom_to_list(node()),
                  "--host-types", "cart,tally",
                  "--proxy-only",
                  "--singleton", "ledger=counter",
                  "--singleton", "boss=kv",
                  "--config", "/etc/sn.config",
                  "--set", "data_dir=/tmp/sn",
                  "--set", "number_of_shards=10",
                  "--verbose", "x"],
                 flat(Args)),
    {ok, #{args := Args2}} =
        command(Config, #{name => "c1@127.0.0.1", cookie => c, join => [], proxy_only => false}),
    ?assertEqual(["--name", "c1@127.0.0.1", "--stop-on-stdin-eof", "--cookie", "c"], Args2),
    %% types => [] is none of the built-in types, not the defaults
    {ok, #{args := Args3}} = command(Config, #{name => "c1@127.0.0.1", cookie => c, types => []}),
    ?assertEqual(["--name", "c1@127.0.0.1", "--stop-on-stdin-eof", "--cookie", "c", "--types", ""], flat(Args3)).

%% Strings, binaries, atoms and integers go as they are; other terms in
%% Erlang syntax, as file:consult/1 reads them.
config_values(Config) ->
    {ok, #{args := Args}} =
        command(Config, #{name => "c1@127.0.0.1", cookie => c,
                          config => #{a => "text", b => <<"bin">>, c => on, d => -3,
                                      e => [1, 2], f => {x, 1.5}, "g" => 1}}),
    ?assertEqual(["--set", "a=text", "--set", "b=bin", "--set", "c=on", "--set", "d=-3",
                  "--set", "e=[1,2]", "--set", "f={x,1.5}", "--set", "g=1"],
                 lists:nthtail(5, flat(Args))).

default_cookie(Config) ->
    {ok, #{args := Args}} = command(Config, #{name => "c1@127.0.0.1"}),
    ?assertEqual(["--name", "c1@127.0.0.1", "--stop-on-stdin-eof",
                  "--cookie", atom_to_list(erlang:get_cookie())], Args).

%% Without `executable': $SHARDNODE_EXECUTABLE when set.
default_executable(Config) ->
    Exe = ?config(exe, Config),
    Old = os:getenv("SHARDNODE_EXECUTABLE"),
    try
        true = os:putenv("SHARDNODE_EXECUTABLE", Exe),
        ?assertMatch({ok, #{executable := Exe}},
                     shardnode_args:command(#{name => "c1@127.0.0.1"})),
        Missing = filename:join(?config(priv_dir, Config), "missing"),
        true = os:putenv("SHARDNODE_EXECUTABLE", Missing),
        ?assertEqual({error, {executable_not_found, [Missing]}},
                     shardnode_args:command(#{name => "c1@127.0.0.1"}))
    after
        case Old of
            false -> os:unsetenv("SHARDNODE_EXECUTABLE");
            _ -> os:putenv("SHARDNODE_EXECUTABLE", Old)
        end
    end.

netns(Config) ->
    Exe = ?config(exe, Config),
    case os:find_executable("ip") of
        false ->
            ?assertEqual({error, {executable_not_found, ["ip"]}},
                         command(Config, #{name => "c1@127.0.0.1", netns => "ns1"}));
        Ip ->
            {ok, #{executable := Ip, args := Args}} =
                command(Config, #{name => "c1@127.0.0.1", cookie => c, netns => ns1}),
            ?assertEqual(["netns", "exec", "ns1", Exe, "--name", "c1@127.0.0.1",
                          "--stop-on-stdin-eof", "--cookie", "c"], Args)
    end.

refused(Config) ->
    Name = #{name => "c1@127.0.0.1"},
    Refused =
        [{#{}, missing_name},
         {Name#{colour => red}, {unknown_option, colour}},
         {Name#{sname => "c2"}, {bad_option, name_and_sname}},
         {#{name => "c1"}, {bad_option, {name, "c1"}}},
         {#{name => "@127.0.0.1"}, {bad_option, {name, "@127.0.0.1"}}},
         {#{sname => ""}, {bad_option, {sname, ""}}},
         {#{name => {c1}}, {bad_option, {name, {c1}}}},
         {Name#{cookie => a, cookie_file => "f"}, {bad_option, cookie_and_cookie_file}},
         {Name#{port => 65536}, {bad_option, {port, 65536}}},
         {Name#{entities => [cart]}, {bad_option, {entities, [cart]}}},
         {Name#{entities => #{"cart" => cart}}, {bad_option, {entities, #{"cart" => cart}}}},
         {Name#{port => "4370"}, {bad_option, {port, "4370"}}},
         {Name#{join => 'a@h'}, {bad_option, {join, 'a@h'}}},
         {Name#{types => [counter, {kv}]}, {bad_option, {types, {kv}}}},
         {Name#{proxy_only => yes}, {bad_option, {proxy_only, yes}}},
         {Name#{singletons => ledger}, {bad_option, {singletons, ledger}}},
         {Name#{singletons => [{ledger, "counter"}]}, {bad_option, {singletons, {ledger, "counter"}}}},
         {Name#{config => [{a, 1}]}, {bad_option, {config, [{a, 1}]}}},
         {Name#{extra_args => verbose}, {bad_option, {extra_args, verbose}}},
         {Name#{extra_args => [{x}]}, {bad_option, {extra_args, {x}}}},
         %% One string where a list of them belongs: not one argument per character.
         {Name#{extra_args => "--x"}, {bad_option, {extra_args, "--x"}}},
         {Name#{ready_timeout => -1}, {bad_option, {ready_timeout, -1}}}],
    [?assertEqual({Opts, {error, Reason}}, {Opts, command(Config, Opts)})
     || {Opts, Reason} <- Refused],
    ?assertEqual({error, {bad_option, [{name, "c1@h"}]}},
                 shardnode_args:command([{name, "c1@h"}])),
    Missing = filename:join(?config(priv_dir, Config), "missing"),
    ?assertEqual({error, {executable_not_found, [Missing]}},
                 shardnode_args:command(Name#{executable => Missing})).

redact(_Config) ->
    ?assertEqual(["--name", "c1@h", "--cookie", "********", "--port", "1",
                  "--cookie", "********"],
                 shardnode_args:redact(["--name", "c1@h", "--cookie", "secret", "--port", "1",
                                        "--cookie", "other"])),
    ?assertEqual(["--cookie-file", "/tmp/c"], shardnode_args:redact(["--cookie-file", "/tmp/c"])),
    %% a connection string may hold a password; other settings stay
    ?assertEqual(["--set", "number_of_shards=10", "--set", "postgres_conninfo=********"],
                 shardnode_args:redact(["--set", "number_of_shards=10",
                                        "--set", "postgres_conninfo=host=db password=secret"])).

%%====================================================================
%% Helpers
%%====================================================================

command(Config, Opts) ->
    shardnode_args:command(maps:merge(#{executable => ?config(exe, Config)}, Opts)).

%% `--join' and `--types' values are iolists (lists:join/2 of strings).
flat(Args) ->
    [lists:flatten(A) || A <- Args].
