%% Writes the seed corpus of fuzz/cluster_msg_fuzz.c: the cluster's own
%% messages as members send them (docs/protocol.md), each behind the
%% target's selector byte (bit 0: 0 membership, 1 remembered entities;
%% bits 4-5: the sender, 0 being a@127.0.0.1 whom the messages name).
%%
%%   erlc fuzz/cluster_msg_seeds.erl && \
%%   erl -noshell -eval 'cluster_msg_seeds:main("fuzz/corpus/cluster_msg"), halt().'
-module(cluster_msg_seeds).
-export([main/1]).

t(T) -> <<131, B/binary>> = term_to_binary(T), B.

main(Dir) ->
    A = 'a@127.0.0.1', B = 'b@127.0.0.1', C = 'c@127.0.0.1',
    Membership =
        [{'$shardnode', join, A, [counter]},
         {'$shardnode', join, A, [counter, kv]},
         {'$shardnode', gossip, A, [{A, 1, up, 3, [counter]}, {B, 2, up, 1, [counter, kv]},
                                    {C, 0, joining, 1, []}]},
         {'$shardnode', gossip, A, [{A, 1, leaving, 4, [counter]}, {B, 2, down, 2, [kv]},
                                    {C, 3, exiting, 5, [counter]}]},
         {'$shardnode', gossip, A, [{A, 1, up, 1, [counter]}, {B, 2, removed, 9, []}]},
         {'$shardnode', reachability, A, [{A, 17, [B]}, {B, 3, [A, C]}]},
         {'$shardnode', heartbeat, A, 123456},
         {'$shardnode', heartbeat_ack, A, 123456}],
    Remembered =
        [{'$shardnode', remembered, A, [{3, true, 17}, {0, false, <<"x">>}, {1, true, {order, 42}}]},
         {'$shardnode', remembered, A, [{S, true, N} || N <- lists:seq(1, 20), S <- [erlang:phash2(N, 8)]]},
         {'$shardnode', remembered, A, [{2, false, 1 bsl 70}, {5, true, [a, b]}, {0, true, #{k => v}}]}],
    Seeds = [<<0, (t(M))/binary>> || M <- Membership]
        ++ [<<12, (t(M))/binary>> || M <- Membership]
        ++ [<<16, (t(hd(Membership)))/binary>>, <<48, (t(hd(Membership)))/binary>>]
        ++ [<<15, (t(M))/binary>> || M <- Remembered],
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    lists:foldl(fun(S, N) -> ok = file:write_file(filename:join(Dir, io_lib:format("seed-~3..0b", [N])), S), N + 1 end,
                0, Seeds).
