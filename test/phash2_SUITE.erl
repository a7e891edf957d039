%% The C port of erlang:phash2 (c_src/phash2.c) against the live BEAM.
%%
%% Shards are chosen with erlang:phash2(EntityId, NumberOfShards), so the C
%% node must compute it bit for bit as the BEAM does. The suite builds a
%% small port program (test/phash2_driver.c with c_src/phash2.c and
%% c_src/term.c) into its priv_dir, feeds it thousands of random terms from
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
    c_driver:build(Config, "phash2_driver", ["c_src/phash2.c", "c_src/term.c"]).

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
          nest(100000)],
    check_all(Config, Ts, []).

%% Thousands of random terms from a seeded generator.
random_terms(Config) ->
    Seed = env_int("PHASH2_SEED", ?DEFAULT_SEED),
    Count = env_int("PHASH2_COUNT", ?DEFAULT_COUNT),
    ct:log("seed ~p, ~p terms", [Seed, Count]),
    rand:seed(exsss, Seed),
    Ts = [gen_term(4) || _ <- lists:seq(1, Count)],
    N = check_all(Config, Ts, []),
    ct:comment("~p random terms agree (seed ~p)", [N, Seed]),
    ok.

%% The same values in encodings term_to_binary uses only on request: UTF-8
%% atoms (minor_version 2) and the old textual floats (minor_version 0).
other_encodings(Config) ->
    rand:seed(exsss, env_int("PHASH2_SEED", ?DEFAULT_SEED) + 1),
    Ts = [gen_term(3) || _ <- lists:seq(1, 1000)],
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

env_int(Name, Default) ->
    case os:getenv(Name) of
        false -> Default;
        "" -> Default;
        S -> list_to_integer(S)
    end.

nest(0) -> [];
nest(N) when N rem 2 =:= 0 -> nest_list(N);
nest(N) -> {nest(N - 1)}.

nest_list(N) -> [nest(N - 1)].

%%====================================================================
%% Random terms
%%====================================================================

pick(L) -> lists:nth(rand:uniform(length(L)), L).

%% A weighted choice: [{Weight, Fun}].
weighted(Choices) ->
    Total = lists:sum([W || {W, _} <- Choices]),
    weighted(rand:uniform(Total), Choices).

weighted(R, [{W, F} | _]) when R =< W -> F();
weighted(R, [{W, _} | Rest]) -> weighted(R - W, Rest).

gen_term(D) when D =< 0 ->
    gen_leaf();
gen_term(D) ->
    weighted([{10, fun gen_leaf/0},
              {2, fun() -> gen_list(D) end},
              {1, fun() -> gen_improper(D) end},
              {2, fun() -> gen_tuple(D) end},
              {2, fun() -> gen_map(D) end}]).

gen_leaf() ->
    weighted([{6, fun gen_int/0},
              {2, fun gen_float/0},
              {3, fun gen_atom/0},
              {2, fun gen_binary/0},
              {1, fun gen_bits/0},
              {2, fun gen_string/0},
              {1, fun() -> pick([[], {}, #{}, <<>>, '']) end}]).

gen_int() ->
    weighted([{3, fun() -> rand:uniform(2001) - 1001 end},
              {2, fun() -> rand:uniform(256) - 1 end},
              {5, fun gen_edge_int/0},
              {2, fun() -> sign() * rand:uniform(1 bsl 64) end},
              {2, fun() -> sign() * rand_bits(rand:uniform(2000)) end}]).

%% Values at and around the widths where the BEAM changes representation
%% (28-bit hash words, 32-bit words, 60-bit smalls, 64-bit digits).
gen_edge_int() ->
    Bits = pick([7, 8, 15, 16, 26, 27, 28, 31, 32, 33, 58, 59, 60, 61, 63, 64, 65,
                 95, 96, 127, 128, 129, 191, 192]),
    sign() * ((1 bsl Bits) + rand:uniform(5) - 3).

sign() -> pick([1, -1]).

rand_bits(N) ->
    Bytes = (N + 7) div 8,
    binary:decode_unsigned(rand:bytes(Bytes)) bsr (Bytes * 8 - N).

gen_float() ->
    weighted([{1, fun() -> pick([0.0, -0.0, 1.0, -1.0, 0.5, 1.0e300, -1.0e-300, 5.0e-324]) end},
              {3, fun() -> sign() * rand:uniform() * math:pow(10, rand:uniform(40) - 20) end},
              {1, fun() -> float(rand:uniform(1 bsl 40) - (1 bsl 39)) end},
              {2, fun random_float_bits/0}]).

%% Any finite double, from random bits (NaN and infinities are not terms).
random_float_bits() ->
    case <<(rand:uniform(1 bsl 64) - 1):64>> of
        <<F/float>> -> F;
        _ -> random_float_bits()
    end.

gen_atom() ->
    Len = rand:uniform(21) - 1,
    Chars = weighted(
              [{3, fun() -> [pick(lists:seq($a, $z) ++ "_@") || _ <- lists:seq(1, Len)] end},
               {2, fun() -> [rand:uniform(256) - 1 || _ <- lists:seq(1, Len)] end},
               {2, fun() -> [unicode_char() || _ <- lists:seq(1, Len)] end}]),
    list_to_atom(Chars).

unicode_char() ->
    weighted([{2, fun() -> 16#80 + rand:uniform(16#780) - 1 end},      % 2-byte UTF-8
              {2, fun() -> 16#800 + rand:uniform(16#D000) - 1 end},     % 3-byte, below surrogates
              {1, fun() -> 16#10000 + rand:uniform(16#FFFFF) - 1 end},  % 4-byte
              {1, fun() -> rand:uniform(128) - 1 end}]).

gen_binary() ->
    Len = weighted([{5, fun() -> rand:uniform(30) - 1 end},
                    {2, fun() -> rand:uniform(200) end},
                    {1, fun() -> rand:uniform(5000) end}]),
    rand:bytes(Len).

%% Bitstrings, some cut at a bit offset so the BEAM hashes an unaligned
%% sub-binary (the wire form is always aligned).
gen_bits() ->
    Bin = rand:bytes(rand:uniform(40)),
    Skip = rand:uniform(8) - 1,
    <<_:Skip, Rest/bitstring>> = <<Bin/binary, (rand:uniform(128) - 1):7>>,
    case bit_size(Rest) rem 8 of
        0 -> <<Rest/bitstring, 1:3>>;
        _ -> Rest
    end.

gen_string() ->
    weighted([{1000, fun() -> [rand:uniform(256) - 1 || _ <- lists:seq(1, rand:uniform(40) - 1)] end},
              {500, fun() -> [pick(lists:seq($a, $z)) || _ <- lists:seq(1, rand:uniform(20))] end},
              %% now and then too long for STRING_EXT: a LIST_EXT of bytes
              {1, fun() -> [rand:uniform(256) - 1 || _ <- lists:seq(1, 65530 + rand:uniform(20))] end}]).

gen_list(D) ->
    weighted([{3, fun() -> [gen_term(D - 1) || _ <- lists:seq(1, rand:uniform(8) - 1)] end},
              %% bytes mixed with other terms: runs of string bytes broken up
              {2, fun() -> [case rand:uniform(3) of
                                1 -> gen_term(D - 1);
                                _ -> rand:uniform(256) - 1
                            end || _ <- lists:seq(1, rand:uniform(12))] end}]).

gen_improper(D) ->
    Tail = weighted([{3, fun gen_leaf/0}, {1, fun() -> gen_tuple(D - 1) end}]),
    case Tail of
        L when is_list(L) -> gen_improper(D);
        _ -> lists:foldl(fun(E, Acc) -> [E | Acc] end, Tail,
                         [weighted([{1, fun() -> gen_term(D - 1) end},
                                    {1, fun() -> rand:uniform(256) - 1 end}])
                          || _ <- lists:seq(1, rand:uniform(6))])
    end.

gen_tuple(D) ->
    weighted([{8, fun() -> list_to_tuple([gen_term(D - 1) || _ <- lists:seq(1, rand:uniform(7) - 1)]) end},
              {1, fun() -> list_to_tuple([gen_leaf() || _ <- lists:seq(1, 250 + rand:uniform(20))]) end}]).

%% Small maps (flatmaps) and, above 32 keys, hash-array-mapped maps (whose
%% keys and values are kept small so the terms stay a reasonable size).
gen_map(D) ->
    weighted([{6, fun() -> maps:from_list([{gen_term(D - 1), gen_term(D - 1)}
                                           || _ <- lists:seq(1, rand:uniform(9) - 1)]) end},
              {3, fun() -> maps:from_list([{gen_leaf(), weighted([{2, fun gen_leaf/0},
                                                                  {1, fun() -> {gen_leaf(), [gen_leaf()]} end}])}
                                           || _ <- lists:seq(1, 28 + rand:uniform(60))]) end}]).
