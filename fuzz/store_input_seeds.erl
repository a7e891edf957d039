%% Writes the seed corpus of fuzz/store_input_fuzz.c, each seed behind the
%% target's selector byte: 0 a remembered-entities log as the node writes
%% it, 1 LMDB records as the state store keeps them, 2 config files, 3
%% epmd's replies.
%%
%%   erlc fuzz/store_input_seeds.erl && \
%%   erl -noshell -eval 'store_input_seeds:main("fuzz/corpus/store_input"), halt().'
-module(store_input_seeds).
-export([main/1]).

%% An id's bytes as the stores keep them: the term without its version byte.
id(T) -> <<131, B/binary>> = term_to_binary(T, [{minor_version, 2}]), B.

remembered(NShards, Records) ->
    Log = << <<Op, 0:32, (byte_size(id(Id))):32, (id(Id))/binary>> || {Op, Id} <- Records >>,
    <<0, NShards, "SNREMEM1", Log/binary>>.

lmdb(Records) ->
    Rs = << <<0, (4 + byte_size(id(Id))), Shard:32, (id(Id))/binary,
              (byte_size(term_to_binary(State))):16, (term_to_binary(State))/binary>>
            || {Shard, Id, State} <- Records >>,
    <<1, Rs/binary>>.

main(Dir) ->
    Seeds =
        [remembered(4, [{$+, 1}, {$+, <<"user-7">>}, {$+, {order, 42}}, {$-, 1}, {$+, 'an_atom'}]),
         remembered(1, [{$+, N} || N <- lists:seq(1, 20)]),
         remembered(3, [{$+, 1.5}, {$+, [1, 2, 3]}, {$+, #{a => 1}}, {$+, 1 bsl 70}, {$-, 1 bsl 70}]),
         <<0, 2, "SNREMEM1", $+, 0:32, 2:32, 97, 1>>,
         lmdb([{0, 1, 10}, {0, 2, #{count => 3}}, {1, <<"k">>, {put, <<"v">>}}, {2, 7, [a, b]}]),
         lmdb([{S, N, N * 2} || S <- [0, 1], N <- lists:seq(1, 12)]),
         <<1, 1, 0, 2:16, 131, 97>>,
         <<2, "{number_of_shards, 100}.\n{remember_entities, true}.\n{downing, auto}.\n">>,
         <<2, "%% comment\n{data_dir, \"/var/lib/shardnode\"}.\n{state_store, lmdb}.\n{log_level, info}.\n">>,
         <<2, "{state_store, postgres}.\n{postgres_conninfo, \"host=/tmp dbname=sn\"}.\n{store_timeout_ms, 5000}.\n">>,
         <<2, "{max_message_bytes, 1048576}. {net_ticktime, 60}. {outq_max_bytes, 65536}.">>,
         <<3, 121, 0, 16#5a5a0001:32>>, <<3, 118, 0, 7:16>>, <<3, 121, 1, 0:32>>,
         <<3, 119, 0, 40000:16, 72, 0, 6:16, 6:16, 1:16, "a", 0:16>>, <<3, 119, 1>>],
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    lists:foldl(fun(S, N) -> ok = file:write_file(filename:join(Dir, io_lib:format("seed-~3..0b", [N])), S), N + 1 end,
                0, Seeds).
