%% Writes the seed corpus of fuzz/peer_input_fuzz.c: distribution packets
%% and handshake messages as a BEAM writes them (term_to_binary of the
%% control tuples and messages the node sees), each behind the target's
%% selector byte (0: the distribution stream, 1: a handshake stream).
%%
%%   erlc fuzz/peer_input_seeds.erl && \
%%   erl -noshell -name g@127.0.0.1 -eval 'peer_input_seeds:main("fuzz/corpus/peer_input"), halt().'
-module(peer_input_seeds).
-export([main/1]).
p(Ctl, Msg) ->
    C = term_to_binary(Ctl),
    M = case Msg of none -> <<>>; _ -> term_to_binary(Msg) end,
    Body = <<112, C/binary, M/binary>>,
    <<(byte_size(Body)):32, Body/binary>>.
main(Dir) ->
    Me = self(), Ref = make_ref(), Alias = alias(),
    Calls = [p({6, Me, '', shardnode}, {'$gen_call', {Me, [alias | Alias]}, shard_types}),
             p({6, Me, '', counter}, {'$gen_call', {Me, Ref}, {7, incr}}),
             p({6, Me, '', kv}, {'$gen_call', {Me, [alias | Alias]}, {<<"key">>, {put, value, #{a => 1}}}}),
             p({2, '', Me}, {'$shardnode', tell, Me, 5, get}),
             p({6, Me, '', counter}, {'$shardnode', shard_home, 3, Me}),
             p({6, Me, '', shardnode}, {'$shardnode', join, 'a@127.0.0.1', [counter]}),
             p({19, Me, shardnode, Ref}, none), p({20, Me, shardnode, Ref}, none),
             p({22, Me, Me}, hello),
             p({2, '', Me}, {'$shardnode_done', <<"c1">>, Me, 3, ok, {state, #{apple => 2}}, continue}),
             p({2, '', Me}, {'$shardnode_done', <<"c1">>, Me, 4, #{apple => 2}, unchanged, stop}),
             p({2, '', Me}, {'$shardnode_crashed', <<"c1">>, Me, {badarg, [{cart, handle, 2, []}]}}),
             p({2, '', Me}, {'$shardnode_host', welcome, Me, [cart, order]}),
             p({2, '', Me}, {'$shardnode_host', types, [cart]}),
             <<0:32>>],
    Stream = iolist_to_binary(Calls),
    Big = p({6, Me, '', shardnode}, {'$gen_call', {Me, [alias | Alias]}, {binary:copy(<<7>>, 5000)}}),
    Hs = [<<(byte_size(B)):16, B/binary>>
          || B <- [<<$N, 16#d07fdf45:64, 16#5a5a0001:32, 11:16, "a@127.0.0.1">>, <<$s, "ok">>, <<$s, "alive">>,
                   <<$N, 16#d07fdf45:64, 42:32, 16#5a5a0002:32, 3:16, "b@h">>, <<$r, 42:32, 0:128>>,
                   <<$a, 0:128>>, <<$n, 5:16, 16#d07fdf45:32, 42:32, "a@h">>]],
    Seeds = [<<0, Stream/binary>>, <<0, Big/binary>> | [<<0, C/binary>> || C <- Calls]]
        ++ [<<1, (iolist_to_binary(Hs))/binary>> | [<<1, H/binary>> || H <- Hs]],
    lists:foldl(fun(S, N) -> ok = file:write_file(filename:join(Dir, io_lib:format("seed-~3..0b", [N])), S), N + 1 end,
                0, Seeds).
