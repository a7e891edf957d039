%% Random Erlang terms for the property suites (phash2_SUITE,
%% entity_id_SUITE): every type the wire carries, with extra weight on the
%% edges where an encoding or the BEAM's representation changes. Seed the
%% process's rand state first (rand:seed/2) for a reproducible run.
-module(random_term).

-export([term/1, long_string/0, nest/2, env_int/2]).

%% @doc A random term nested at most Depth deep.
-spec term(non_neg_integer()) -> term().
term(Depth) -> gen_term(Depth).

%% @doc A byte list near the 65535 elements of a STRING_EXT, in a wrapper.
-spec long_string() -> term().
long_string() -> gen_long_string().

%% @doc Depth levels of alternating 1-tuples and 1-lists around Leaf.
-spec nest(non_neg_integer(), term()) -> term().
nest(0, Leaf) -> Leaf;
nest(N, Leaf) when N rem 2 =:= 0 -> [nest(N - 1, Leaf)];
nest(N, Leaf) -> {nest(N - 1, Leaf)}.

%% @doc An integer from the environment, or Default.
-spec env_int(string(), integer()) -> integer().
env_int(Name, Default) ->
    case os:getenv(Name) of
        false -> Default;
        "" -> Default;
        S -> list_to_integer(S)
    end.

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
              {4, fun gen_edge_int/0},
              {2, fun() -> sign() * rand:uniform(1 bsl 64) end},
              {2, fun() -> sign() * rand_bits(rand:uniform(2100)) end}]).

%% Values around the widths where an encoding or a representation changes:
%% 8 bits (SMALL_INTEGER_EXT), 27/28 bits (phash2's one-word integers), 31
%% and 32 bits (INTEGER_EXT, words), 59-61 bits (BEAM smalls), 64-bit and
%% 96/128/192-bit bignum digits, 255 bytes (LARGE_BIG_EXT).
gen_edge_int() ->
    Bits = pick([7, 8, 9, 15, 16, 23, 24, 26, 27, 28, 30, 31, 32, 33, 58, 59, 60, 61, 63, 64, 65,
                 95, 96, 127, 128, 129, 191, 192, 2031, 2032, 2040, 2041]),
    sign() * ((1 bsl Bits) + rand:uniform(5) - 3).

sign() -> pick([1, -1]).

rand_bits(N) ->
    Bytes = (N + 7) div 8,
    binary:decode_unsigned(rand:bytes(Bytes)) bsr (Bytes * 8 - N).

gen_float() ->
    weighted([{1, fun() -> pick([0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 1.0e300, -1.0e-300, 5.0e-324]) end},
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
    Len = weighted([{8, fun() -> rand:uniform(21) - 1 end},
                    {1, fun() -> 250 + rand:uniform(6) - 1 end}]),
    Chars = weighted(
              [{3, fun() -> [pick(lists:seq($a, $z) ++ "_@AZ") || _ <- lists:seq(1, Len)] end},
               {2, fun() -> [rand:uniform(256) - 1 || _ <- lists:seq(1, Len)] end},
               {2, fun() -> [unicode_char() || _ <- lists:seq(1, Len)] end}]),
    list_to_atom(Chars).

unicode_char() ->
    weighted([{2, fun() -> 16#80 + rand:uniform(16#780) - 1 end},      % 2-byte UTF-8
              {2, fun() -> 16#800 + rand:uniform(16#D000) - 1 end},     % 3-byte, below surrogates
              {1, fun() -> 16#E000 + rand:uniform(16#2000) - 1 end},    % 3-byte, above them
              {1, fun() -> 16#10000 + rand:uniform(16#FFFFF) - 1 end},  % 4-byte
              {1, fun() -> rand:uniform(128) - 1 end}]).

gen_binary() ->
    Len = weighted([{5, fun() -> rand:uniform(30) - 1 end},
                    {2, fun() -> rand:uniform(200) end},
                    {1, fun() -> rand:uniform(5000) end}]),
    rand:bytes(Len).

%% Bitstrings, some cut at a bit offset so the BEAM holds an unaligned
%% sub-binary (the wire form is always aligned).
gen_bits() ->
    Bin = rand:bytes(rand:uniform(41) - 1),
    Skip = rand:uniform(8) - 1,
    <<_:Skip, Rest/bitstring>> = <<Bin/binary, (rand:uniform(128) - 1):7>>,
    case bit_size(Rest) rem 8 of
        0 -> <<Rest/bitstring, 1:3>>;
        _ -> Rest
    end.

gen_string() ->
    weighted([{2, fun() -> [rand:uniform(256) - 1 || _ <- lists:seq(1, rand:uniform(40) - 1)] end},
              {1, fun() -> [pick(lists:seq($a, $z)) || _ <- lists:seq(1, rand:uniform(20))] end}]).

%% Byte lists just below and above the 65535 elements of a STRING_EXT, at
%% the top or one level down (a megabyte of heap each: kept rare).
gen_long_string() ->
    S = [rand:uniform(256) - 1 || _ <- lists:seq(1, 65530 + rand:uniform(10))],
    pick([S, {S}, [S], [x | S], S ++ [256], #{S => S}]).

gen_list(D) ->
    weighted([{3, fun() -> [gen_term(D - 1) || _ <- lists:seq(1, rand:uniform(8) - 1)] end},
              %% bytes mixed with other terms, and integers just out of byte range
              {2, fun() -> [case rand:uniform(4) of
                                1 -> gen_term(D - 1);
                                2 -> pick([-1, 256, 1000, 1.0]);
                                _ -> rand:uniform(256) - 1
                            end || _ <- lists:seq(1, rand:uniform(12))] end}]).

gen_improper(D) ->
    Tail = weighted([{3, fun gen_leaf/0}, {1, fun() -> gen_tuple(D - 1) end}]),
    case Tail of
        L when is_list(L) -> gen_improper(D);
        _ -> lists:foldl(fun(E, Acc) -> [E | Acc] end, Tail,
                         [pick([gen_term(D - 1), rand:uniform(256) - 1])
                          || _ <- lists:seq(1, rand:uniform(6))])
    end.

gen_tuple(D) ->
    weighted([{16, fun() -> list_to_tuple([gen_term(D - 1) || _ <- lists:seq(1, rand:uniform(7) - 1)]) end},
              {1, fun() -> list_to_tuple([gen_leaf() || _ <- lists:seq(1, 250 + rand:uniform(20))]) end}]).

%% Small maps (flatmaps) and, above 32 keys, hash-array-mapped maps; the
%% large ones only near the top, and with small keys and values, to keep
%% the terms small.
gen_map(D) ->
    case weighted([{12, fun() -> rand:uniform(9) - 1 end},
                   {1, fun() -> 28 + rand:uniform(8) end},
                   {2, fun() -> 33 + rand:uniform(60) end}]) of
        N when N =< 8 ->
            maps:from_list([{gen_term(D - 1), gen_term(D - 1)} || _ <- lists:seq(1, N)]);
        N ->
            maps:from_list([{gen_term(min(D - 1, 1)), gen_term(min(D - 1, 1))}
                            || _ <- lists:seq(1, N)])
    end.
