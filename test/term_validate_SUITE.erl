%% term_validate (c_src/etf/term_validate.c) against the live BEAM, differentially:
%% a term the node accepts from a peer must be one binary_to_term/1 accepts
%% too, and the other way round — a term the node stored and handed back
%% that the BEAM then refuses makes the BEAM drop the connection. And on
%% every input both accept, the node's phash2 (its shard choice) must be
%% erlang:phash2/2 of what the BEAM decodes.
%%
%% The inputs: term_to_binary of random terms, and mutations of them
%% (bytes changed, cut, inserted, repeated, length fields blown up), and a
%% list of hand-made edge cases. binary_to_term/1 reads the first term and
%% ignores any bytes after it; so does the driver (term_validate_driver.c)
%% here. (The node itself also refuses a packet with bytes after its
%% message: that is framing, not term validity.)
%%
%%   rebar3 ct --dir test --suite term_validate_SUITE
%%   TERM_VALIDATE_SEED=7 rebar3 ct ...   (another seed)
%%
%% Each run decodes its inputs with binary_to_term/1 on the test node, and
%% mutated atoms are new atoms: a run of more than about 50 000 mutations
%% fills the node's atom table (1 048 576). Run other seeds instead.
-module(term_validate_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([random_terms_agree/1, mutated_terms_agree/1, edge_cases_agree/1,
         encodings_no_writer_makes_are_refused/1, empty_bit_strings_agree/1,
         identifiers_naming_the_reader_agree/1]).

-define(DEFAULT_SEED, 20261125).
-define(DEFAULT_COUNT, 20000).

suite() -> [{timetrap, {minutes, 5}}].

all() -> [random_terms_agree, mutated_terms_agree, edge_cases_agree,
          encodings_no_writer_makes_are_refused, empty_bit_strings_agree,
          identifiers_naming_the_reader_agree].

init_per_suite(Config) ->
    c_driver:build(Config, "term_validate_driver",
                   ["c_src/etf/phash2.c", "c_src/etf/term_readable.c" | c_driver:term_sources()]).

end_per_suite(_Config) -> ok.

init_per_testcase(_Case, Config) -> [{port, c_driver:open(Config)} | Config].

end_per_testcase(_Case, Config) -> c_driver:close(Config).

%%====================================================================
%% Cases
%%====================================================================

%% What term_to_binary writes, both ways it can write atoms and floats.
random_terms_agree(Config) ->
    rand:seed(exsss, seed()),
    Ts = [random_term:term(4) || _ <- lists:seq(1, count() div 10)],
    Bins = lists:append([[term_to_binary(T), term_to_binary(T, [{minor_version, 0}]),
                          term_to_binary(T, [{minor_version, 2}])] || T <- Ts]),
    agree(Config, Bins).

%% Mutations of valid terms: most are refused by both, some are accepted
%% by both as other terms, and none may split them.
mutated_terms_agree(Config) ->
    rand:seed(exsss, seed() + 1),
    N = count(),
    Bins = [mutate(term_to_binary(random_term:term(3), pick_opts())) || _ <- lists:seq(1, N)],
    agree(Config, Bins).

%% Inputs a structural check gets wrong: atom text, float text, bignum
%% signs, references, bit binaries, exports, funs, maps.
edge_cases_agree(Config) ->
    agree(Config, edge_cases()).

%% The node's refusals beyond the BEAM (docs/contract.md, "Bad input"):
%% encodings no writer makes, on which the BEAM reads past the term or ei
%% would. Each is refused, though the BEAM reads it, and the term as the
%% BEAM writes it is accepted. (Not term_to_binary of what the BEAM read:
%% OTP 25 dies of a segmentation fault encoding a fun whose Pid was an
%% atom — one more reason the node never hands such a fun to a BEAM.)
encodings_no_writer_makes_are_refused(Config) ->
    Port = ?config(port, Config),
    Fun = term_to_binary(fun() -> ok end, [{minor_version, 2}]),
    <<131, 112, Size:32, FunRest/binary>> = Fun,
    Hex = fun(H) -> <<131, (binary:decode_hex(H))/binary>> end,
    Export = term_to_binary(fun m:f/3),
    Inputs =
        %% {1.0}: its text fills the 31 bytes and runs on into the bytes
        %% after the term, "0" and a NUL (found by fuzzing).
        [{Hex(<<"680163312e30303030303030303030303030303030303030303030303030303030303000">>),
          term_to_binary({1.0})},
         {<<131, 99, "1.00000000000000000000e+00000000", 0>>, term_to_binary(1.0)}]
        %% A fun whose Size is not its length (an 83-byte fun whose Size
        %% said 26 332 had ei read 26 KB past it); whose Pid is an atom.
        ++ [{<<131, 112, S:32, FunRest/binary>>, Fun} || S <- [Size + 7, Size - 1, 26332, 0]]
        ++ [{fun_with_atom_pid(Fun), Fun},
            %% An export whose arity is wrapped in empty lists.
            {<<131, 113, 119, 1, "m", 119, 1, "f", 108, 0:32, 97, 3>>, Export},
            {<<131, 113, 119, 1, "m", 119, 1, "f", 108, 0:32, 108, 0:32, 98, 3:32>>, Export}],
    [begin
         ?assertMatch({ok, _}, beam(B)),
         ?assertEqual(refused, c(Port, B), B),
         ?assertMatch({accepted, _}, c(Port, Written), Written)
     end || {B, Written} <- Inputs],
    ok.

%% <<>> written as a bit string of no bytes, alone and in a map of two
%% pairs (found by fuzzing: the node refused both as ids, and so the map):
%% both accept it, and the node's phash2 is the BEAM's.
empty_bit_strings_agree(Config) ->
    Port = ?config(port, Config),
    Hex = fun(H) -> <<131, (binary:decode_hex(H))/binary>> end,
    Inputs = [Hex(<<"4d0000000000">>), Hex(<<"74000000026101610277004d0000000000">>),
              <<131, 104, 2, 77, 0:32, 0, 108, 1:32, 77, 0:32, 0, 106>>],
    [begin
         {ok, T} = beam(B),
         ?assertEqual(c(Port, term_to_binary(T)), c(Port, B)),
         ?assert(same({ok, T}, c(Port, B)))
     end || B <- Inputs],
    {ok, <<>>} = beam(hd(Inputs)),
    ok.

%% Pids, references and ports naming this node (its name and creation),
%% another creation of it, or another node, with numbers around what a
%% BEAM hands out, alone and inside a tuple: binary_to_term/1 here refuses
%% exactly those the node's term_readable_by says this node cannot read
%% (found by fuzzing: the node handed such a stored pid back to the node
%% it named, which dropped the connection).
identifiers_naming_the_reader_agree(Config) ->
    Port = ?config(port, Config),
    rand:seed(exsss, seed() + 2),
    Me = atom_to_binary(node()),
    Cre = erlang:system_info(creation),
    Terms = [identifier(pick([{Me, Cre}, {Me, Cre}, {Me, Cre bxor 1}, {<<"other@127.0.0.1">>, Cre}]))
             || _ <- lists:seq(1, count() div 4)],
    Bins = [case rand:uniform(3) of
                1 -> <<131, 104, 2, 97, 1, T/binary>>;
                _ -> <<131, T/binary>>
            end || T <- Terms],
    Split = [{B, Beam, C} || B <- Bins,
                             Beam <- [beam(B)],
                             C <- [readable(Port, node(), Cre, B)],
                             not readable_agrees(Beam, C)],
    ct:log("~b identifiers, ~b the BEAM refused, ~b disagreements",
           [length(Bins), length([x || B <- Bins, beam(B) =:= refused]), length(Split)]),
    [ct:log("DISAGREE~n input: ~w~n BEAM: ~P~n C: ~p", [B, show(Beam), 20, C]) || {B, Beam, C} <- lists:sublist(Split, 20)],
    ?assertEqual([], Split).

%% A pid, reference or port in every encoding, with numbers drawn around
%% the bounds a BEAM keeps to (no external-format version byte).
identifier({Node, Cre}) ->
    Name = case rand:uniform(3) of
               1 -> <<119, (byte_size(Node)), Node/binary>>;
               2 -> <<100, (byte_size(Node)):16, Node/binary>>;
               3 -> <<115, (byte_size(Node)), Node/binary>>
           end,
    Near = fun(Bound) -> pick([0, 1, Bound - 1, Bound, Bound + 1, 16#FFFFFFFF, rand:uniform(Bound)]) end,
    case rand:uniform(7) of
        1 -> <<88, Name/binary, (Near(1 bsl 15)):32, (Near(1 bsl 13)):32, Cre:32>>;
        2 -> <<103, Name/binary, (Near(1 bsl 15)):32, (Near(1 bsl 13)):32, (Cre band 3)>>;
        3 -> Words = rand:uniform(5),
             <<90, Words:16, Name/binary, Cre:32, (Near(1 bsl 18)):32,
               << <<(rand:uniform(1 bsl 32) - 1):32>> || _ <- lists:seq(2, Words) >>/binary>>;
        4 -> Words = rand:uniform(5),
             <<114, Words:16, Name/binary, (Cre band 3), (rand:uniform(1 bsl 18) - 1):32,
               << <<(rand:uniform(1 bsl 32) - 1):32>> || _ <- lists:seq(2, Words) >>/binary>>;
        5 -> <<89, Name/binary, (Near(1 bsl 28)):32, Cre:32>>;
        6 -> <<120, Name/binary, (pick([0, 1, (1 bsl 28) - 1, 1 bsl 28, 1 bsl 32, 1 bsl 63])):64, Cre:32>>;
        7 -> <<102, Name/binary, (Near(1 bsl 28)):32, (Cre band 3)>>
    end.

%% The driver's verdict on whether Node (of creation Cre) reads B.
readable(Port, Node, Cre, B) ->
    Name = atom_to_binary(Node),
    true = port_command(Port, <<$R, Cre:32, (byte_size(Name)), Name/binary, B/binary>>),
    receive
        {Port, {data, <<0, _:96>>}} -> readable;
        {Port, {data, <<1, _:96>>}} -> unreadable;
        {Port, {data, <<2, _:96>>}} -> invalid;
        {Port, {exit_status, S}} -> ct:fail("driver exited with ~p", [S])
    after 10000 -> ct:fail("no answer from the driver")
    end.

%% The BEAM takes what this node can read and nothing else; what the
%% validator refuses for every node (an old reference's first word past
%% 18 bits, a bad creation byte) the BEAM refuses too.
readable_agrees({ok, _}, readable) -> true;
readable_agrees(refused, unreadable) -> true;
readable_agrees(refused, invalid) -> true;
readable_agrees(_, _) -> false.

%% The fun's Pid field replaced by an atom, its Size kept right.
fun_with_atom_pid(<<131, 112, _:32, Fixed:25/binary, Rest/binary>> = Fun) ->
    {env, Env} = erlang:fun_info(binary_to_term(Fun), env),
    [] = Env,
    %% Module atom, OldIndex, OldUniq, then the pid: find the pid's tag.
    {PidAt, PidLen} = pid_span(Rest),
    <<Before:PidAt/binary, _:PidLen/binary, After/binary>> = Rest,
    Body = <<Fixed/binary, Before/binary, 119, 1, "p", After/binary>>,
    <<131, 112, (byte_size(Body) + 4):32, Body/binary>>.

%% Where the creator pid lies in a fun's bytes after its fixed header: the
%% module (a UTF-8 atom as OTP 25 writes it), then two integers.
pid_span(<<119, L, _:L/binary, Rest/binary>>) ->
    Skip = fun(<<97, _, R/binary>>) -> {2, R};
              (<<98, _:32, R/binary>>) -> {5, R} end,
    {A, R1} = Skip(Rest),
    {B, <<88, 119, N, _:N/binary, _:12/binary, _/binary>>} = Skip(R1),
    {2 + L + A + B, 1 + 2 + N + 12}.

%%====================================================================
%% Comparing
%%====================================================================

agree(Config, Bins) ->
    Port = ?config(port, Config),
    Results = [{B, beam(B), c(Port, B)} || B <- Bins],
    Split = [{B, Beam, C} || {B, Beam, C} <- Results, not same(Beam, C), not internal_atom_ref(Port, B, Beam, C),
                             not float_text_without_nul(Port, B, Beam, C), not fun_ei_cannot_walk(Port, B, Beam, C)],
    Accepted = length([x || {_, {ok, _}, _} <- Results]),
    ct:log("~b inputs, ~b accepted by the BEAM, ~b disagreements", [length(Bins), Accepted, length(Split)]),
    [ct:log("DISAGREE~n input: ~w~n BEAM: ~P~n C:    ~p", [B, show(Beam), 20, C])
     || {B, Beam, C} <- lists:sublist(Split, 40)],
    case Split of
        [] -> ok;
        _ -> ct:fail("~b of ~b inputs split term_validate and binary_to_term", [length(Split), length(Bins)])
    end.

%% The one refusal the node makes on purpose: an atom written as 'I' or 'K'
%% (its index in this runtime's atom table, which the node cannot know). A
%% mutation can still move such a byte into a tag's place: the input has
%% one, and the term the BEAM read, written the usual way, is accepted.
internal_atom_ref(Port, B, {ok, T}, refused) ->
    (binary:match(B, [<<73>>, <<75>>]) =/= nomatch) andalso c_as_written(Port, T) =/= refused;
internal_atom_ref(_, _, _, _) -> false.

%% A FLOAT_EXT's text ends at a NUL, which the BEAM looks for past the
%% field's 31 bytes — into the bytes after the term, or past the binary's
%% end, where what it finds is whatever memory holds. The node refuses a
%% text with no NUL inside its 31 bytes: the input holds a 99 followed by
%% 31 bytes none of which is 0, and the term the BEAM read is accepted as
%% the BEAM writes it.
float_text_without_nul(Port, B, {ok, T}, refused) ->
    lists:any(fun({At, _}) -> At + 32 > byte_size(B) orelse
                                  binary:match(B, <<0>>, [{scope, {At + 1, 31}}]) =:= nomatch
              end, binary:matches(B, <<99>>))
        andalso c_as_written(Port, T) =/= refused;
float_text_without_nul(_, _, _, _) -> false.

%% A fun or export whose fields ei trusts and the BEAM ignores or unwraps
%% (a Size that is not its length, a Pid that is no pid, an integer inside
%% empty-list wrappers): the term the BEAM read holds a fun, and written
%% as the BEAM writes it, it is accepted.
fun_ei_cannot_walk(Port, _B, {ok, T}, refused) ->
    holds_fun(T) andalso (not funs_hold_pids(T) orelse c_as_written(Port, T) =/= refused);
fun_ei_cannot_walk(_, _, _, _) -> false.

%% The node's verdict on T as the BEAM writes it; `refused' for a term
%% holding a fun whose creator is no pid, which is never written.
c_as_written(Port, T) ->
    case funs_hold_pids(T) of
        true -> c(Port, term_to_binary(T));
        false -> refused
    end.

%% Whether every fun in T has a pid as its creator: term_to_binary/1 of
%% one that has not kills an OTP 25 runtime (such funs come only from
%% mutated inputs; the node refuses them).
funs_hold_pids(T) ->
    not any_fun(fun(F) -> erlang:fun_info(F, type) =:= {type, local} andalso
                              not is_pid(element(2, erlang:fun_info(F, pid))) end, T).

holds_fun(T) -> any_fun(fun(_) -> true end, T).

%% Whether Pred holds for a fun anywhere in T: in its containers, and in
%% a local fun's free variables.
any_fun(Pred, T) when is_function(T) ->
    Pred(T) orelse (erlang:fun_info(T, type) =:= {type, local} andalso
                    any_fun(Pred, element(2, erlang:fun_info(T, env))));
any_fun(Pred, T) when is_tuple(T) -> any_fun(Pred, tuple_to_list(T));
any_fun(Pred, T) when is_map(T) -> any_fun(Pred, maps:to_list(T));
any_fun(Pred, [H | T]) -> any_fun(Pred, H) orelse any_fun(Pred, T);
any_fun(_, _) -> false.

show({ok, T}) -> {ok, T};
show(R) -> R.

beam(B) ->
    try binary_to_term(B) of
        T -> {ok, T}
    catch
        error:badarg -> refused
    end.

c(Port, B) ->
    true = port_command(Port, B),
    receive
        {Port, {data, <<1, _:96>>}} -> refused;
        {Port, {data, <<0, 16#FFFFFFFF:32, E:32, 0:32>>}} -> {accepted, {errno, E}};
        {Port, {data, <<0, A:32, H:32, W:32>>}} -> {accepted, {A, H, W}};
        {Port, {exit_status, S}} -> ct:fail("driver exited with ~p", [S])
    after 10000 -> ct:fail("no answer from the driver")
    end.

%% Both refuse; or both accept, and where the node hashes the term (not a
%% pid, port, reference or fun) its hash is the BEAM's.
same(refused, refused) -> true;
same({ok, _}, {accepted, {errno, _}}) -> true;
same({ok, T}, {accepted, Hash}) -> Hash =:= {erlang:phash2(T), erlang:phash2(T, 100), erlang:phash2(T, 1 bsl 32)};
same(_, _) -> false.

%%====================================================================
%% Inputs
%%====================================================================

seed() -> random_term:env_int("TERM_VALIDATE_SEED", ?DEFAULT_SEED).
count() -> random_term:env_int("TERM_VALIDATE_COUNT", ?DEFAULT_COUNT).

pick(L) -> lists:nth(rand:uniform(length(L)), L).

pick_opts() -> pick([[], [{minor_version, 0}], [{minor_version, 2}]]).

%% One to three mutations of a valid external term.
mutate(B) ->
    lists:foldl(fun(_, Acc) -> mutate_once(Acc) end, B, lists:seq(1, rand:uniform(3))).

mutate_once(<<131>>) -> <<131, (rand:uniform(256) - 1)>>;
mutate_once(B) ->
    Size = byte_size(B),
    At = 1 + rand:uniform(Size - 1) - 1, % never the version byte
    case rand:uniform(8) of
        1 -> set_byte(B, At, not_internal_atom_tag(rand:uniform(256) - 1));
        2 -> set_byte(B, At, pick([0, 1, 2, 4, 5, 31, 127, 128, 254, 255 | tags()]));
        3 -> binary:part(B, 0, At);
        4 -> <<B/binary, (crypto:strong_rand_bytes(rand:uniform(8)))/binary>>;
        5 -> Len = rand:uniform(Size - At), <<(binary:part(B, 0, At + Len))/binary,
                                              (binary:part(B, At, Size - At))/binary>>;
        6 -> Len = rand:uniform(Size - At), <<(binary:part(B, 0, At))/binary,
                                              (binary:part(B, At + Len, Size - At - Len))/binary>>;
        7 -> set_word(B, At, pick([0, 1, 16#FF, 16#FFFF, 16#7FFFFFFF, 16#FFFFFFFF]));
        8 -> set_byte(B, At, pick(tags()))
    end.

tags() -> [70, 77, 82, 88, 89, 90, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108,
           109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121].

%% 'I' and 'K' name atoms by their index in this runtime's atom table, which
%% binary_to_term/1 takes and the node, which cannot know that table,
%% refuses: a mutation never writes them.
not_internal_atom_tag(73) -> 72;
not_internal_atom_tag(75) -> 74;
not_internal_atom_tag(V) -> V.

set_byte(B, At, V) ->
    <<Pre:At/binary, _, Post/binary>> = B,
    <<Pre/binary, V, Post/binary>>.

set_word(B, At, V) when At + 4 =< byte_size(B) ->
    <<Pre:At/binary, _:32, Post/binary>> = B,
    <<Pre/binary, V:32, Post/binary>>;
set_word(B, At, V) -> set_byte(B, At, V band 255).

%% Hand-made inputs, each an external term (with its version byte).
edge_cases() ->
    Utf8 = fun(Bytes) -> <<131, 119, (byte_size(Bytes)), Bytes/binary>> end,
    Latin1 = fun(Bytes) -> <<131, 115, (byte_size(Bytes)), Bytes/binary>> end,
    Float = fun(Text) -> <<131, 99, (pad31(Text))/binary>> end,
    Node = <<119, 3, "a@h">>,
    Atoms = [Utf8(<<"ok">>), Utf8(<<>>), Utf8(<<16#C3, 16#A9>>), Utf8(<<16#C3>>), Utf8(<<16#A9>>),
             Utf8(<<16#C0, 16#80>>), Utf8(<<16#E0, 16#80, 16#80>>), Utf8(<<16#ED, 16#A0, 16#80>>),
             Utf8(<<16#F4, 16#90, 16#80, 16#80>>), Utf8(<<16#F8, 16#88, 16#80, 16#80, 16#80>>),
             Utf8(<<16#FF>>), Utf8(<<0>>), Utf8(<<"a", 0, "b">>), Latin1(<<255, 0, 128>>),
             <<131, 118, 1020:16, (binary:copy(<<240, 159, 152, 128>>, 255))/binary>>,
             <<131, 118, 1024:16, (binary:copy(<<240, 159, 152, 128>>, 256))/binary>>,
             <<131, 100, 256:16, (binary:copy(<<"a">>, 256))/binary>>,
             <<131, 100, 255:16, (binary:copy(<<"a">>, 255))/binary>>],
    Floats = [Float(T) || T <- [<<"1.5">>, <<"0,2">>, <<"nan">>, <<"inf">>, <<"-inf">>, <<"1.5junk">>,
                                 <<" 1.5">>, <<"1.5 ">>, <<"">>, <<"1e400">>, <<"-0.0">>, <<"1">>,
                                 <<"1.">>, <<".5">>, <<"0x10">>, <<"1.0e-400">>, <<"+1.5">>,
                                 <<"1.50000000000000000000e+00">>]],
    NewFloats = [<<131, 70, F/binary>> || F <- [<<0:64>>, <<16#7FF0000000000000:64>>,
                                                <<16#7FF8000000000000:64>>, <<16#FFF0000000000000:64>>,
                                                <<16#8000000000000000:64>>, <<1:64>>]],
    Bigs = [<<131, 110, 1, S, 5>> || S <- [0, 1, 2, 255]] ++
        [<<131, 110, 0, 0>>, <<131, 110, 0, 1>>, <<131, 111, 0:32, 0>>, <<131, 110, 2, 0, 5, 0>>,
         <<131, 110, 8, 0, 0:64>>, <<131, 111, 1:32, 2, 7>>],
    %% (A reference of no words is left out: the BEAM reads words it did not
    %% size for, and answers differently from run to run. The node refuses it.)
    Refs = [<<131, 90, N:16, Node/binary, 1:32, 0:(N * 32)>> || N <- [1, 2, 3, 4, 5, 6]] ++
        [<<131, 114, N:16, Node/binary, C, W:32, 0:((N - 1) * 32)>>
         || N <- [1, 3, 5, 6], C <- [0, 3, 4], W <- [0, 16#3FFFF, 16#40000]] ++
        [<<131, 101, Node/binary, W:32, C>> || W <- [0, 16#3FFFF, 16#40000], C <- [0, 3, 4]] ++
        [<<131, 90, 1:16, 97, 7, 0:32, 0:32>>],
    Pids = [<<131, 88, Node/binary, 0:32, 0:32, 0:32>>, <<131, 103, Node/binary, 0:32, 0:32, 3>>,
            <<131, 103, Node/binary, 0:32, 0:32, 4>>, <<131, 88, 97, 1, 0:32, 0:32, 0:32>>,
            <<131, 88, 106, 0:32, 0:32, 0:32>>],
    Ports = [<<131, 89, Node/binary, 1:32, 1:32>>, <<131, 120, Node/binary, 1:64, 1:32>>,
             <<131, 102, Node/binary, 1:32, 1>>],
    Bits = [<<131, 77, L:32, B, 0:(L * 8)>> || L <- [0, 1, 2], B <- [0, 1, 7, 8, 9]],
    Exports = [<<131, 113, M/binary, F/binary, A/binary>>
               || M <- [<<119, 1, "m">>, <<97, 1>>], F <- [<<119, 1, "f">>, <<106>>],
                  A <- [<<97, 2>>, <<98, 2:32>>, <<98, 256:32>>, <<98, -1:32>>, <<119, 1, "a">>,
                        <<110, 1, 0, 5>>, <<110, 1, 1, 5>>, <<110, 0, 1>>, <<110, 8, 0, 16#7FFFFFFFFFFFFFF:64/little>>,
                        <<110, 8, 0, 16#800000000000000:64/little>>, <<108, 0:32, 97, 3>>,
                        <<108, 0:32, 108, 0:32, 98, 7:32>>, <<108, 1:32, 97, 3, 106>>, <<70, 0:64>>]],
    Maps = [<<131, 116, 2:32, 97, 1, 97, 2, 97, 1, 97, 3>>, <<131, 116, 2:32, 97, 1, 97, 2, 98, 1:32, 97, 3>>,
            <<131, 116, 1:32, 106, 106>>, <<131, 116, 0:32>>],
    %% An element that is a list of no elements is its tail: {[0|92]} and
    %% [1,0,0] written so (found by fuzzing: phash2 took them for lists).
    Lists = [<<131, 108, 0:32, 106>>, <<131, 108, 1:32, 108, 0:32, 106, 106>>, <<131, 108, 0:32, 97, 1>>,
             <<131, 104, 1, 108, 1:32, 108, 0:32, 97, 0, 97, 92>>,
             <<131, 108, 0:32, 108, 3:32, 98, 1:32, 98, 0:32, 108, 0:32, 98, 0:32, 106>>,
             <<131, 104, 1, 108, 0:32, 106>>, <<131, 107, 0:16>>],
    Misc = [<<131>>, <<>>, <<130, 106>>, <<131, 106, 0>>, <<131, 82, 0>>, <<131, 121>>,
            <<131, 80, 0:32>>, <<131, 117, 0:32>>,
            <<131, 111, 4194296:32, 0, 0:(4194296 * 8)>>, <<131, 111, 4194297:32, 0, 0:(4194297 * 8)>>,
            <<131, 99, "1.00000000000000000000e+00000000", 0>>,
            <<131, 99, "1.00000000000000000000e+00000000", "1", 0>>,
            <<131, 99, "1.00000000000000000000e+00000000">>],
    Fun = term_to_binary(fun() -> ok end),
    %% The same fun with its Size field wrong: the BEAM ignores it, the node
    %% refuses it (encodings_no_writer_makes_are_refused; agree/2 knows).
    <<131, 112, Size:32, FunRest/binary>> = Fun,
    Funs = [term_to_binary(fun lists:map/2), Fun, <<131, 112, (Size + 7):32, FunRest/binary>>,
            <<131, 112, 0:32, FunRest/binary>>],
    Atoms ++ Floats ++ NewFloats ++ Bigs ++ Refs ++ Pids ++ Ports ++ Bits ++ Exports ++ Maps ++ Lists ++ Misc
        ++ Funs.

pad31(Text) -> <<Text/binary, 0:((31 - byte_size(Text)) * 8)>>.
