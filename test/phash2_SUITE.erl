%% The C port of erlang:phash2 (c_src/etf/phash2.c) against the live BEAM.
%%
%% Shards are chosen with erlang:phash2(EntityId, NumberOfShards), so the C
%% node must compute it bit for bit as the BEAM does. The suite builds a
%% small port program (test/phash2_driver.c with c_src/etf/phash2.c and
%% c_src/etf/term.c) into its priv_dir, feeds it thousands of random terms from
%% a seeded generator, and compares phash2(T), phash2(T, 100) and
%% phash2(T, 1 bsl 32) from both sides.
%%
%%   rebar3 ct --dir test --suite phash2_SUITE
%%
%% The seed is fixed so a failure reproduces; set PHASH2_SEED=N to try
%% another one, PHASH2_COUNT=N to change the number of random terms.
-module(phash2_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([fixed_terms/1, random_terms/1, other_encodings/1,
         refused_terms/1]).

-define(DEFAULT_SEED, 20240611).
-define(DEFAULT_COUNT, 5000).
-define(EINVAL, 22).

suite() ->
    [{timetrap, {minutes, 5}}].

all() ->
    [fixed_terms, random_terms, other_encodings, refused_terms].

%%====================================================================
%% Setup: compile the driver
%%====================================================================

init_per_suite(Config) ->
    c_driver:build(Config, "phash2_driver", ["c_src/etf/phash2.c" | c_driver:term_sources()]).

end_per_suite(_Config) ->
    ok.

init_per_testcase(_Case, Config) ->
    [{port, c_driver:open(Config)} | Config].

end_per_testcase(_Case, Config) ->
    c_driver:close(Config).

%%====================================================================
%% Cases
%%====================================================================

%% A few hand-picked terms at the interesting edges.
fixed_terms(Config) ->
    Ts = [0, 1, -1, 255, 256, 1 bsl 27 - 1, 1 bsl 27, -(1 bsl 27), -(1 bsl 27) - 1,
          1 bsl 31, -(1 bsl 31), 1 bsl 32, 1 bsl 59, 1 bsl 60, -(1 bsl 60), 1 bsl 64,
          1 bsl 2000, -(1 bsl 2000),
          0.0, -0.0, 1.0, -1.5, 1.0e300, 5.0e-324,
          a, '', 'ünï', '日本', list_to_atom(lists:duplicate(255, 16#1F600)),
          <<>>, <<1,2,3>>, <<1:3>>, <<7:13>>,
          [], [1,2], "abc", [a|b], [1,2|3], "ab" ++ [x] ++ "cd",
          lists:seq(1, 70000), [I rem 256 || I <- lists:seq(1, 70000)],
          {}, {a,b}, list_to_tuple(lists:seq(1, 300)),
          #{}, #{a => 1}, maps:from_list([{I, I} || I <- lists:seq(1, 40)]),
          random_term:nest(100000, [])],
    check_all(Config, Ts, []).

%% Thousands of random terms from a seeded generator.
random_terms(Config) ->
    Seed = random_term:env_int("PHASH2_SEED", ?DEFAULT_SEED),
    Count = random_term:env_int("PHASH2_COUNT", ?DEFAULT_COUNT),
    ct:log("seed ~p, ~p terms", [Seed, Count]),
    rand:seed(exsss, Seed),
    Ts = [random_term:term(4) || _ <- lists:seq(1, Count)],
    N = check_all(Config, Ts, []),
    ct:comment("~p random terms agree (seed ~p)", [N, Seed]),
    ok.

%% The same values in encodings term_to_binary uses only on request: UTF-8
%% atoms (minor_version 2) and the old textual floats (minor_version 0).
other_encodings(Config) ->
    rand:seed(exsss, random_term:env_int("PHASH2_SEED", ?DEFAULT_SEED) + 1),
    Ts = [random_term:term(3) || _ <- lists:seq(1, 1000)],
    check_all(Config, Ts, [{minor_version, 2}]),
    check_all(Config, Ts, [{minor_version, 0}]),
    ok.

%% EntityIds may not be pids, ports, references or funs: the C side says
%% EINVAL for those, wherever they sit in the term.
refused_terms(Config) ->
    Port = ?config(port, Config),
    Refused = [self(), make_ref(), hd(erlang:ports()), fun() -> ok end,
               fun lists:map/2, {ok, [1, #{k => self()}]}, [a | make_ref()]],
    lists:foreach(
      fun(T) ->
              ?assertEqual({16#FFFFFFFF, ?EINVAL, 0}, c_hash(Port, term_to_binary(T)),
                           lists:flatten(io_lib:format("~p", [T])))
      end, Refused).

%%====================================================================
%% Comparing
%%====================================================================

%% Checks every term, fails listing the first mismatches; returns the count.
check_all(Config, Ts, Opts) ->
    Port = ?config(port, Config),
    Bad = lists:filtermap(
            fun(T) ->
                    Want = {erlang:phash2(T), erlang:phash2(T, 100), erlang:phash2(T, 1 bsl 32)},
                    Ext = term_to_binary(T, Opts),
                    case c_hash(Port, Ext) of
                        Want -> false;
                        Got -> {true, {T, Ext, Want, Got}}
                    end
            end, Ts),
    case Bad of
        [] ->
            length(Ts);
        _ ->
            [ct:log("MISMATCH~n term: ~P~n ext:  ~P~n BEAM {phash2/1, /100, /2^32}: ~p~n C:    ~p",
                    [T, 30, Ext, 60, Want, Got])
             || {T, Ext, Want, Got} <- lists:sublist(Bad, 20)],
            {T1, _, W1, G1} = hd(Bad),
            ct:fail("~p of ~p terms hash differently (opts ~p); first: ~P BEAM ~p C ~p",
                    [length(Bad), length(Ts), Opts, T1, 20, W1, G1])
    end.

c_hash(Port, Ext) ->
    true = port_command(Port, Ext),
    receive
        {Port, {data, <<A:32, B:32, C:32>>}} -> {A, B, C};
        {Port, {exit_status, S}} -> ct:fail("phash2 driver exited with ~p", [S])
    after 10000 ->
        ct:fail("no answer from the phash2 driver")
    end.

