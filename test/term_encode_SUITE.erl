%% The node's encoders of integers and atoms (c_src/etf/term_encode.c, and
%% entity_int_encode for the counters' values) against term_to_binary on the
%% live BEAM, byte for byte; and its printer of terms for log records
%% (c_src/etf/term_print.c) against io_lib:format("~p").
%%
%% ei writes an integer outside 28 bits as SMALL_BIG_EXT where the BEAM
%% writes INTEGER_EXT, and ei_x_encode_atom reads its text as Latin-1; a
%% BEAM that compares the bytes of a reply or a stored state must see what
%% term_to_binary gives. The suite builds test/term_encode_driver.c into its
%% priv_dir and feeds it every edge of every form, then thousands of random
%% integers and atoms from a seeded generator.
%%
%%   rebar3 ct --dir test --suite term_encode_SUITE
-module(term_encode_SUITE).

-include_lib("common_test/include/ct.hrl").
-include_lib("stdlib/include/assert.hrl").

-export([all/0, suite/0, init_per_suite/1, end_per_suite/1,
         init_per_testcase/2, end_per_testcase/2]).
-export([integers_at_every_edge/1, random_integers/1, atoms/1,
         printed_as_the_beam_prints/1, random_terms_printed/1]).

-define(SEED, 20261127).

suite() -> [{timetrap, {minutes, 2}}].

all() -> [integers_at_every_edge, random_integers, atoms, printed_as_the_beam_prints, random_terms_printed].

init_per_suite(Config) ->
    c_driver:build(Config, "term_encode_driver",
                   ["c_src/entity/entity_int.c", "c_src/etf/term_print.c" | c_driver:term_sources()]).

end_per_suite(_Config) -> ok.

init_per_testcase(_Case, Config) -> [{port, c_driver:open(Config)} | Config].

end_per_testcase(_Case, Config) -> c_driver:close(Config).

%%====================================================================
%% Cases
%%====================================================================

%% Each boundary of SMALL_INTEGER_EXT, INTEGER_EXT (32 bits: ei stops at
%% 28) and SMALL_BIG_EXT's byte counts, on both sides of zero.
integers_at_every_edge(Config) ->
    Port = ?config(port, Config),
    Edges = lists:usort(lists:append([[E - 1, E, E + 1, -E - 1, -E, -E + 1]
                                      || B <- [0, 8, 27, 28, 31, 32, 40, 56, 63, 64],
                                         E <- [1 bsl B]])),
    [same(Port, Kind, I) || I <- Edges, Kind <- kinds(I)],
    ok.

random_integers(Config) ->
    Port = ?config(port, Config),
    rand:seed(exsss, ?SEED),
    [begin
         Bits = rand:uniform(66) - 1,
         I = (rand:uniform(1 bsl Bits) - 1) * (case rand:uniform(2) of 1 -> 1; 2 -> -1 end),
         [same(Port, Kind, I) || Kind <- kinds(I)]
     end || _ <- lists:seq(1, 3000)],
    %% Counters never wrap: bigger values too, through entity_int.
    [same(Port, $n, rand:uniform(1 bsl 300) - (1 bsl 299)) || _ <- lists:seq(1, 500)],
    ok.

%% Atoms of Latin-1 and of other letters (a node named né@host), of one
%% to 255 characters, as SMALL_ATOM_UTF8_EXT and ATOM_UTF8_EXT: every atom
%% the node writes is UTF-8.
atoms(Config) ->
    Port = ?config(port, Config),
    Fixed = ['', a, 'né@host', 'ünï', '日本@h', '$shardnode', 'node@127.0.0.1',
             list_to_atom(lists:duplicate(255, $a)), list_to_atom(lists:duplicate(85, $日)),
             list_to_atom(lists:duplicate(86, $日)), list_to_atom(lists:duplicate(255, 16#1F600))],
    [same(Port, $a, A) || A <- Fixed],
    rand:seed(exsss, ?SEED),
    Chars = [$a, $z, $@, $., 16#e9, 16#ff, 16#100, 16#65e5, 16#1F600],
    [same(Port, $a, list_to_atom([lists:nth(rand:uniform(length(Chars)), Chars)
                                  || _ <- lists:seq(1, rand:uniform(255))]))
     || _ <- lists:seq(1, 1000)],
    ok.

%% Ids, messages and reasons as a log record shows them: as ~p does.
printed_as_the_beam_prints(Config) ->
    Port = ?config(port, Config),
    Ts = [<<"alice">>, <<>>, <<1, 2>>, <<"a", 7>>, <<"a\nb\"\\">>, <<"é"/utf8>>, <<1:3>>, <<"ab", 1:3>>,
          "", "abc", "a\nb", "né", [7], [1000], [$a, 1000], [a | b], [1, 2 | 3], [[]], "\e\x7f",
          0, -1, 255, 256, 1 bsl 27, 1 bsl 31, -(1 bsl 31) - 1, 1 bsl 64, -(1 bsl 64), 1 bsl 200, -(1 bsl 1000),
          1.0, 0.1, -0.0, 1.0e10, 1.0e-5, 123456789.0, 1.0e15, 1.0e16, 0.0001, 0.001, 1.5e300, 5.0e-324,
          123.456, 12345678901234567.0, 2.2250738585072014e-308, 1.7976931348623157e308, 0.3, 1/3,
          a, 'A', 'a b', '', 'after', 'maybe', 'else', 'a\nb', 'it\'s', 'né@h', '日本', 'ß', 'a÷', 'aÀ',
          'A@b', a@b, '_a', a_1, 'a.b', '$shardnode',
          {}, {a}, {a, <<"b">>, [1]}, #{}, #{a => 1}, #{a => 1, <<"b">> => [1]},
          {cart, <<"alice">>, {add, <<"apple">>, 3}}, {error, {entity_crashed, {badarith, []}}}],
    [printed(Port, T) || T <- Ts],
    ok.

random_terms_printed(Config) ->
    Port = ?config(port, Config),
    rand:seed(exsss, ?SEED),
    Printed = [printed(Port, T) || _ <- lists:seq(1, 3000), T <- [random_term:term(3)], plain(T)],
    ct:log("~b random terms printed as ~~p prints them", [length([P || P <- Printed, P])]),
    ok.

%%====================================================================
%% Helpers
%%====================================================================

%% A term ~p prints as this printer does: no pid, port, reference or fun
%% (~p numbers their node by a table of its own), and short enough that
%% ~p does not break it over lines.
plain(T) when is_pid(T); is_port(T); is_reference(T); is_function(T) -> false;
plain(T) when is_tuple(T) -> plain(tuple_to_list(T));
plain(T) when is_map(T) -> plain(maps:to_list(T));
plain([H | Rest]) -> plain(H) andalso plain(Rest);
plain(_) -> true.

printed(Port, T) ->
    Text = lists:flatten(io_lib:format("~p", [T])),
    case lists:member($\n, Text) of
        true -> false; %% ~p broke it over lines: this printer never does
        false ->
            Expected = unicode:characters_to_binary(Text),
            true = port_command(Port, [$p, term_to_binary(T)]),
            receive
                {Port, {data, Expected}} -> true;
                {Port, {data, Got}} -> ct:fail({printed_otherwise, T, {beam, Expected}, {node, Got}})
            after 5000 -> ct:fail({driver_silent, T})
            end
    end.

kinds(I) when I >= 0, I < 1 bsl 64 -> [$i, $u, $n];
kinds(I) when I >= -(1 bsl 63), I < 1 bsl 64 -> [$i, $n];
kinds(_) -> [$n].

same(Port, Kind, T) ->
    %% Atoms as UTF-8 (minor_version 2): what the distribution carries and
    %% term_to_binary's default from OTP 26 on (before it, an atom of
    %% Latin-1 letters is written as ATOM_EXT by default; both read the same).
    Expected = term_to_binary(T, [{minor_version, 2}]),
    true = port_command(Port, [Kind, Expected]),
    receive
        {Port, {data, Expected}} -> ok;
        {Port, {data, Got}} -> ct:fail({differs, [Kind], T, {beam, Expected}, {node, Got}})
    after 5000 -> ct:fail({driver_silent, [Kind], T})
    end.
