%% The canonical encoding of entity ids (c_src/etf/entity_id.c) against the live
%% BEAM.
%%
%% Equal terms name the same entity however they were encoded, so the C node
%% rewrites every entity id into one canonical encoding. The suite builds a
%% small port program (test/entity_id_driver.c with c_src/etf/entity_id.c and
%% c_src/etf/term.c) into its priv_dir and checks, for fixed and thousands of
%% seeded random terms T, in every encoding at hand (term_to_binary/1, the
%% minor versions 0 and 2, and randomised hand-made encodings: bignums with
%% zero padding, lists cut into LIST_EXT segments, latin-1 atoms, text
%% floats, shuffled map pairs, bitstrings with garbage in the unused bits):
%%
%%   - the C side accepts it;
%%   - binary_to_term(<<131, Canon/binary>>) =:= T;
%%   - every encoding of T gives the same canonical bytes;
%%   - the canonical bytes are their own canonical form;
%%   - for terms without maps, they are what term_to_binary(T,
%%     [{minor_version, 2}]) writes (map pair order is the C side's own);
%%   - terms with different canonical bytes are different terms.
%%
%% Pids, ports, references and funs anywhere in a term are refused.
%%
%%   rebar3 ct --dir test --suite entity_id_SUITE
%%
%% The seed is fixed so a failure reproduces; set ENTITY_ID_SEED=N to try
%% another one, ENTITY_ID_COUNT=N to change the number of random terms.
-module(entity_id_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([fixed_terms/1, random_terms/1, hand_made_encodings/1,
         distinct_terms/1, refused_terms/1, malformed_terms/1,
         deep_nesting/1]).

-define(DEFAULT_SEED, 20240612).
-define(DEFAULT_COUNT, 5000).
-define(OK, 0).
-define(EINVAL, 1).
-define(EPROTO, 2).

suite() ->
    [{timetrap, {minutes, 10}}].

all() ->
    [fixed_terms, random_terms, hand_made_encodings, distinct_terms,
     refused_terms, malformed_terms, deep_nesting].

%%====================================================================
%% Setup: compile the driver
%%====================================================================

init_per_suite(Config) ->
    c_driver:build(Config, "entity_id_driver", c_driver:term_sources()).

end_per_suite(_Config) ->
    ok.

init_per_testcase(_Case, Config) ->
    [{port, c_driver:open(Config)} | Config].

end_per_testcase(_Case, Config) ->
    c_driver:close(Config).

%%====================================================================
%% Cases
%%====================================================================

%% Hand-picked terms at the edges of every rule.
fixed_terms(Config) ->
    Ts = [0, 1, -1, 255, 256, -256, 1 bsl 27, 1 bsl 31 - 1, 1 bsl 31, -(1 bsl 31),
          -(1 bsl 31) - 1, 1 bsl 32, 1 bsl 64, -(1 bsl 64), 1 bsl 2040, 1 bsl 2048,
          -(1 bsl 5000),
          0.0, -0.0, 1.0, -1.5, 0.1, 1.0e300, -1.0e-300, 5.0e-324, 1.7976931348623157e308,
          a, 'A', '', 'é', 'ünï', '日本', list_to_atom([255 || _ <- lists:seq(1, 255)]),
          list_to_atom(lists:duplicate(255, 16#1F600)), list_to_atom([0]),
          <<>>, <<1,2,3>>, <<1:1>>, <<1:3>>, <<7:13>>, <<0:7>>, binary:copy(<<"x">>, 70000),
          [], "a", "abc", [0], [255], [256], [-1], [a|b], [1,2|3], [1|<<>>], "ab" ++ [x] ++ "cd",
          ["abc"], [[]], [[1]], lists:seq(1, 255), lists:duplicate(65535, 7),
          lists:duplicate(65536, 7), lists:seq(1, 70000), [1.0, 2],
          {}, {a,b}, {[]}, list_to_tuple(lists:seq(1, 255)), list_to_tuple(lists:seq(1, 256)),
          #{}, #{a => 1}, #{1 => a, 1.0 => b}, #{[] => 1, <<>> => 2, {} => 3, #{} => 4},
          #{#{b => 1, a => 2} => x, k => #{d => 1, c => 2}},
          maps:from_list([{I, I} || I <- lists:seq(1, 32)]),
          maps:from_list([{I, I} || I <- lists:seq(1, 33)]),
          maps:from_list([{integer_to_list(I), {I}} || I <- lists:seq(1, 1000)])],
    N = check_all(Config, Ts, 3),
    ct:comment("~p fixed terms", [N]).

%% Thousands of random terms from a seeded generator, each in the BEAM's
%% encodings and two random hand-made ones.
random_terms(Config) ->
    Seed = random_term:env_int("ENTITY_ID_SEED", ?DEFAULT_SEED),
    Count = random_term:env_int("ENTITY_ID_COUNT", ?DEFAULT_COUNT),
    ct:log("seed ~p, ~p terms", [Seed, Count]),
    rand:seed(exsss, Seed),
    %% In batches, so the terms of one batch at a time are in memory.
    Gen = fun() -> case rand:uniform(100) of 1 -> random_term:long_string(); _ -> random_term:term(4) end end,
    N = lists:sum([check_all(Config, [Gen() || _ <- lists:seq(1, min(500, Count - B))], 2)
                   || B <- lists:seq(0, Count - 1, 500)]),
    ct:comment("~p random terms canonical (seed ~p)", [N, Seed]),
    ok.

%% Encodings no BEAM writes, each given with the term it must equal.
hand_made_encodings(Config) ->
    Port = ?config(port, Config),
    Cases = [{5, <<110, 3, 0, 5, 0, 0>>},
             {5, <<111, 0, 0, 0, 2, 0, 5, 0>>},
             {0, <<110, 2, 1, 0, 0>>},
             {0, <<110, 0, 0>>},
             {-(1 bsl 31), <<110, 5, 1, 0, 0, 0, 128, 0>>},
             {1.5, <<99, "1,5", 0:(28*8)>>},
             {1.5, <<99, "15.0e-1", 0:(24*8)>>},
             {foo, <<118, 0, 3, "foo">>},
             {'é', <<100, 0, 1, 16#E9>>},
             {"abc", <<108, 0, 0, 0, 1, 97, $a, 107, 0, 2, "bc">>},
             {"abc", <<108, 0:32, 108, 0, 0, 0, 1, 97, $a, 108, 0:32, 107, 0, 2, "bc">>},
             {"abc", <<108, 0, 0, 0, 3, 98, 0, 0, 0, $a, 110, 1, 0, $b, 97, $c, 106>>},
             {[], <<108, 0:32, 107, 0, 0>>},
             {5, <<108, 0:32, 97, 5>>},
             {[5], <<108, 0, 0, 0, 1, 108, 0:32, 97, 5, 106>>},
             {[1 | 2], <<108, 0:32, 108, 0, 0, 0, 1, 97, 1, 108, 0:32, 97, 2>>},
             {<<5:3>>, <<77, 0, 0, 0, 1, 3, 2#10111111>>},
             {<<"hi">>, <<77, 0, 0, 0, 2, 8, "hi">>},
             {{a}, <<105, 0, 0, 0, 1, 115, 1, $a>>},
             {#{a => 1, b => 2}, <<116, 0, 0, 0, 2, 119, 1, $b, 97, 2, 100, 0, 1, $a, 97, 1>>}],
    lists:foreach(
      fun({T, Bytes}) ->
              Ext = <<131, Bytes/binary>>,
              ?assert(binary_to_term(Ext) =:= T, fmt("BEAM disagrees on ~w", [Bytes])),
              {?OK, Canon} = canon(Port, Ext),
              {?OK, Want} = canon(Port, term_to_binary(T)),
              ?assertEqual(Want, Canon, fmt("~w", [T])),
              ?assert(binary_to_term(<<131, Canon/binary>>) =:= T)
      end, Cases).

%% Different terms give different bytes.
distinct_terms(Config) ->
    Port = ?config(port, Config),
    Pairs = [{1, 1.0}, {0, 0.0}, {"a", <<"a">>}, {[], ''}, {[], <<>>}, {[], {}},
             {a, 'A'}, {a, "a"}, {a, <<"a">>}, {<<0:7>>, <<0>>}, {<<>>, <<0:1>>},
             {[1 | 2], [1, 2]}, {{1}, [1]}, {#{}, {}}, {#{a => 1}, [{a, 1}]},
             {"ab", ["ab"]}, {[[]], []}, {1 bsl 31, -(1 bsl 31)},
             {0.0, -0.0}],                       % equal before OTP 27: see entity_id.h
    lists:foreach(
      fun({A, B}) ->
              {?OK, CA} = canon(Port, term_to_binary(A)),
              {?OK, CB} = canon(Port, term_to_binary(B)),
              ?assertNotEqual(CA, CB, fmt("~w vs ~w", [A, B]))
      end, Pairs),
    %% and "" is [] (one term, one encoding)
    ?assertEqual(canon(Port, term_to_binary([])), canon(Port, <<131, 107, 0, 0>>)).

%% Entity ids may not hold pids, ports, references or funs, at any depth.
refused_terms(Config) ->
    Port = ?config(port, Config),
    Pid = self(),
    Ref = make_ref(),
    P = hd(erlang:ports()),
    Fun = fun() -> ok end,
    Refused = [Pid, Ref, P, Fun, fun lists:map/2,
               {ok, [1, #{k => Pid}]}, [a | Ref], [1, 2, P], #{Ref => 1},
               #{a => 1, b => {[Fun]}}, {{{{{{{{Pid}}}}}}}}, [[[[x, Ref]]]],
               random_term:nest(10000, Pid)],
    lists:foreach(
      fun(T) ->
              ?assertEqual({?EINVAL, <<>>}, canon(Port, term_to_binary(T)), fmt("~P", [T, 10])),
              ?assertEqual({?EINVAL, <<>>}, canon(Port, term_to_binary(T, [{minor_version, 2}])))
      end, Refused).

%% Bytes a BEAM refuses too: duplicate map keys (after canonicalisation),
%% bad atom text, non-finite floats. The C side says EPROTO.
malformed_terms(Config) ->
    Port = ?config(port, Config),
    Bad = [<<116, 2:32, 97, 1, 97, 1, 98, 1:32, 97, 2>>,
           <<116, 2:32, 100, 0, 1, $a, 106, 119, 1, $a, 106>>,
           <<116, 2:32, 107, 0, 1, $a, 106, 108, 1:32, 97, $a, 106, 106>>,
           <<119, 2, 16#C1, 16#81>>,
           <<119, 3, 16#ED, 16#A0, 16#80>>,
           <<70, 16#7FF8:16, 0:48>>,
           <<70, 16#7FF0:16, 0:48>>,
           <<99, "1e5", 0:(28*8)>>],
    lists:foreach(
      fun(Bytes) ->
              Ext = <<131, Bytes/binary>>,
              ?assertError(badarg, binary_to_term(Ext)),
              ?assertEqual({?EPROTO, <<>>}, canon(Port, Ext), fmt("~w", [Bytes]))
      end, Bad).

%% 100000 levels of tuples, lists and maps.
deep_nesting(Config) ->
    Ts = [random_term:nest(100000, x),
          lists:foldl(fun(_, Acc) -> #{z => Acc, a => 1} end, [], lists:seq(1, 100000)),
          lists:foldl(fun(I, Acc) -> #{Acc => I, 0 => 1} end, [], lists:seq(1, 100000)),
          lists:foldl(fun(I, Acc) -> [I rem 300 | Acc] end, x, lists:seq(1, 100000))],
    check_all(Config, Ts, 1).

%%====================================================================
%% Checking
%%====================================================================

%% Checks every term in all its encodings (term_to_binary/1, minor versions
%% 0 and 2, and `Hand' random hand-made ones), then that no two different terms
%% share canonical bytes. Fails listing the first problems; returns the
%% number of terms.
check_all(Config, Ts, Hand) ->
    Port = ?config(port, Config),
    Checked = [{T, check_term(Port, T, Hand)} || T <- Ts],
    Bad = [{T, Why} || {T, {error, Why}} <- Checked],
    case Bad of
        [] -> ok;
        _ ->
            [ct:log("FAILED~n term: ~P~n ~p", [T, 30, Why]) || {T, Why} <- lists:sublist(Bad, 20)],
            {T1, W1} = hd(Bad),
            ct:fail("~p of ~p terms failed; first: ~P~n~P", [length(Bad), length(Ts), T1, 20, W1, 30])
    end,
    Sorted = lists:keysort(2, [{T, C} || {T, {ok, C}} <- Checked]),
    Clashes = [{A, B} || {{A, C1}, {B, C2}} <- lists:zip(lists:droplast(Sorted), tl(Sorted)),
                         C1 =:= C2, A =/= B],
    case Clashes of
        [] -> length(Ts);
        [{A, B} | _] -> ct:fail("~p and ~p share canonical bytes", [A, B])
    end.

check_term(Port, T, Hand) ->
    Ext = term_to_binary(T),
    Encs = [{default, Ext},
            {minor0, term_to_binary(T, [{minor_version, 0}])},
            {minor2, term_to_binary(T, [{minor_version, 2}])}]
        ++ [{{hand, I}, reencode(T)} || I <- lists:seq(1, Hand)],
    try
        [case binary_to_term(E) =:= T of
             true -> ok;
             false -> throw({encoder_bug, Name, E})
         end || {Name, E} <- Encs, Name =/= default],
        Canon = case canon(Port, Ext) of
                    {?OK, C} -> C;
                    Other -> throw({refused, default, Other})
                end,
        case binary_to_term(<<131, Canon/binary>>) of
            T2 when T2 =:= T -> ok;
            T2 -> throw({decodes_to, T2, Canon})
        end,
        [case canon(Port, E) of
             {?OK, Canon} -> ok;
             Got -> throw({differs, Name, E, Canon, Got})
         end || {Name, E} <- tl(Encs)],
        case canon(Port, <<131, Canon/binary>>) of
            {?OK, Canon} -> ok;
            Again -> throw({not_idempotent, Canon, Again})
        end,
        case has_map(T) of
            true -> ok;
            false ->
                <<131, Beam/binary>> = term_to_binary(T, [{minor_version, 2}]),
                Beam =:= Canon orelse throw({not_beam_form, Beam, Canon})
        end,
        {ok, Canon}
    catch
        throw:Why -> {error, Why}
    end.

canon(Port, Ext) ->
    true = port_command(Port, Ext),
    receive
        {Port, {data, <<Status, Bytes/binary>>}} -> {Status, Bytes};
        {Port, {exit_status, S}} -> ct:fail("entity_id driver exited with ~p", [S])
    after 30000 ->
        ct:fail("no answer from the entity_id driver")
    end.

has_map(T) when is_map(T) -> true;
has_map(T) when is_tuple(T) -> has_map(tuple_to_list(T));
has_map([H | T]) -> has_map(H) orelse has_map(T);
has_map(_) -> false.

fmt(F, A) -> lists:flatten(io_lib:format(F, A)).

%%====================================================================
%% Hand-made encodings
%%====================================================================

%% Another valid encoding of T, chosen at random: integers as bignums with
%% zero padding (or INTEGER_EXT), floats as NEW_FLOAT_EXT or text, atoms in
%% any of the four atom encodings that can hold them, binaries as
%% BIT_BINARY_EXT with 8 bits, bitstrings with garbage in the unused bits,
%% tuples as LARGE_TUPLE_EXT, map pairs shuffled, lists as chains of
%% LIST_EXT segments (some empty) ending in their tail, a STRING_EXT or an
%% empty STRING_EXT or LIST_EXT.
reencode(T) ->
    iolist_to_binary([131 | enc(T)]).

enc(I) when is_integer(I) ->
    case rand:uniform(3) of
        1 when I >= -(1 bsl 31), I < 1 bsl 31 -> <<98, I:32/signed>>;
        _ -> enc_big(I)
    end;
enc(F) when is_float(F) ->
    case rand:uniform(2) of
        1 -> <<70, F/float>>;
        2 ->
            Text = list_to_binary(float_to_list(F, [{scientific, pick([16, 17, 18, 20])}])),
            <<99, Text/binary, 0:((31 - byte_size(Text)) * 8)>>
    end;
enc(A) when is_atom(A) ->
    Utf8 = atom_to_binary(A, utf8),
    Chars = atom_to_list(A),
    Latin = case lists:all(fun(C) -> C < 256 end, Chars) of
                true -> [{100, list_to_binary(Chars)}, {115, list_to_binary(Chars)}];
                false -> []
            end,
    Small = [{119, Utf8} || byte_size(Utf8) =< 255],
    case pick([{118, Utf8}] ++ Small ++ Latin) of
        {Tag, Text} when Tag =:= 100; Tag =:= 118 -> <<Tag, (byte_size(Text)):16, Text/binary>>;
        {Tag, Text} -> <<Tag, (byte_size(Text)), Text/binary>>
    end;
enc(B) when is_binary(B) ->
    case rand:uniform(2) of
        1 when byte_size(B) > 0 -> <<77, (byte_size(B)):32, 8, B/binary>>;
        _ -> <<109, (byte_size(B)):32, B/binary>>
    end;
enc(B) when is_bitstring(B) ->
    Bits = bit_size(B) rem 8,
    Whole = bit_size(B) div 8,
    <<Bytes:Whole/binary, Last:Bits>> = B,
    Garbage = rand:uniform(1 bsl (8 - Bits)) - 1,
    <<77, (Whole + 1):32, Bits, Bytes/binary, ((Last bsl (8 - Bits)) bor Garbage)>>;
enc(T) when is_tuple(T) ->
    N = tuple_size(T),
    Hdr = case rand:uniform(2) of
              1 when N =< 255 -> <<104, N>>;
              _ -> <<105, N:32>>
          end,
    [Hdr | [enc(E) || E <- tuple_to_list(T)]];
enc(M) when is_map(M) ->
    Pairs = shuffle(maps:to_list(M)),
    [<<116, (map_size(M)):32>> | [[enc(K), enc(V)] || {K, V} <- Pairs]];
enc([]) ->
    pick([<<106>>, <<107, 0, 0>>, <<108, 0:32, 106>>]);
enc(L) when is_list(L) ->
    {Elems, Tail} = split_improper(L, []),
    enc_segments(Elems, length(Elems), Tail).

enc_big(I) ->
    Sign = if I < 0 -> 1; I > 0 -> 0; true -> rand:uniform(2) - 1 end,
    Digits = binary:encode_unsigned(abs(I), little),
    D = <<Digits/binary, (binary:copy(<<0>>, rand:uniform(4) - 1))/binary>>,
    N = byte_size(D),
    case rand:uniform(3) of
        1 -> <<111, N:32, Sign, D/binary>>;
        _ when N =< 255 -> <<110, N, Sign, D/binary>>;
        _ -> <<111, N:32, Sign, D/binary>>
    end.

split_improper([H | T], Acc) -> split_improper(T, [H | Acc]);
split_improper(Tail, Acc) -> {lists:reverse(Acc), Tail}.

enc_segments([], 0, Tail) ->
    enc(Tail);
enc_segments(Elems, Len, Tail) ->
    case rand:uniform(8) of
        1 ->
            [<<108, 0:32>> | enc_segments(Elems, Len, Tail)];
        2 when Tail =:= [], Len =< 65535 ->
            case lists:all(fun(E) -> is_integer(E) andalso E >= 0 andalso E =< 255 end, Elems) of
                true -> <<107, Len:16, (list_to_binary(Elems))/binary>>;
                false -> enc_segment(Elems, Len, Tail)
            end;
        _ ->
            enc_segment(Elems, Len, Tail)
    end.

enc_segment(Elems, Len, Tail) ->
    K = case rand:uniform(2) of
            1 -> Len;
            2 -> rand:uniform(Len)
        end,
    {Seg, Rest} = lists:split(K, Elems),
    [<<108, K:32>>, [enc(E) || E <- Seg] | enc_segments(Rest, Len - K, Tail)].

shuffle(L) ->
    [X || {_, X} <- lists:sort([{rand:uniform(), X} || X <- L])].

pick(L) -> lists:nth(rand:uniform(length(L)), L).
