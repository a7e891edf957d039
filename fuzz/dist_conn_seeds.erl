%% Writes the seed corpus of fuzz/dist_conn_fuzz.c: whole conversations a
%% peer holds with the node, in either role, as chunks [Ctl, Len, Bytes]
%% (Ctl 1: one handshake message, framed by the harness, digests filled
%% in; 2: the peer closes after it; 0: raw bytes), then distribution
%% packets as a BEAM writes them.
%%
%%   erlc fuzz/dist_conn_seeds.erl && \
%%   erl -noshell -name g@127.0.0.1 -eval 'dist_conn_seeds:main("fuzz/corpus/dist_conn"), halt().'
-module(dist_conn_seeds).
-export([main/1]).

-define(FLAGS, ((16#c bsl 32) bor 16#7070fbd)). % what the node itself advertises, and PUBLISHED

hs(Msg) -> <<1, (byte_size(Msg)), Msg/binary>>.
raw(Bin) when byte_size(Bin) =< 255 -> <<0, (byte_size(Bin)), Bin/binary>>;
raw(<<Head:255/binary, Rest/binary>>) -> <<0, 255, Head/binary, (raw(Rest))/binary>>.
close() -> <<2, 0>>.

packet(Ctl, Msg) ->
    C = term_to_binary(Ctl),
    M = case Msg of none -> <<>>; _ -> term_to_binary(Msg) end,
    Body = <<112, C/binary, M/binary>>,
    <<(byte_size(Body)):32, Body/binary>>.

main(Dir) ->
    Me = self(), Ref = make_ref(),
    Name = <<"peer@127.0.0.1">>,
    SendName = <<$N, ?FLAGS:64, 16#5a5a0001:32, (byte_size(Name)):16, Name/binary>>,
    Reply = <<$r, 16#01020304:32, 0:128>>,
    Challenge = <<$N, ?FLAGS:64, 16#0a0b0c0d:32, 16#5a5a0002:32, (byte_size(Name)):16, Name/binary>>,
    Ack = <<$a, 0:128>>,
    Packets = iolist_to_binary(
                [packet({6, Me, '', shardnode}, {'$gen_call', {Me, [alias | Ref]}, shard_types}),
                 packet({2, '', Me}, hello), <<0:32>>,
                 packet({19, Me, shardnode, Ref}, none),
                 packet({6, Me, '', counter}, {'$gen_call', {Me, Ref}, {7, {binary:copy(<<1>>, 2000)}}}),
                 packet({22, Me, Me}, hello)]),
    Seeds =
        [%% acceptor, arbitration ok, through to packets
         <<0, (hs(SendName))/binary, (hs(Reply))/binary, (raw(Packets))/binary, (close())/binary>>,
         %% acceptor, a connection is up already: the peer says replace it
         <<6, (hs(SendName))/binary, (hs(<<"strue">>))/binary, (hs(Reply))/binary, (raw(Packets))/binary>>,
         <<6, (hs(SendName))/binary, (hs(<<"sfalse">>))/binary>>,
         %% acceptor, ok_simultaneous, nok, refused
         <<2, (hs(SendName))/binary, (hs(Reply))/binary>>,
         <<4, (hs(SendName))/binary>>,
         <<8, (hs(SendName))/binary>>,
         %% acceptor, a wrong digest (sent raw, not filled in)
         <<0, (hs(SendName))/binary, 0, 23, 21:16, Reply/binary>>,
         %% initiator, through to packets
         <<1, (hs(<<"sok">>))/binary, (hs(Challenge))/binary, (hs(Ack))/binary, (raw(Packets))/binary>>,
         <<1, (hs(<<"sok_simultaneous">>))/binary, (hs(Challenge))/binary, (hs(Ack))/binary>>,
         <<1, (hs(<<"snok">>))/binary>>,
         <<1, (hs(<<"salive">>))/binary, (hs(Challenge))/binary, (hs(Ack))/binary>>,
         <<1, (hs(<<"snot_allowed">>))/binary>>,
         <<1, (hs(<<"sok">>))/binary, (hs(Challenge))/binary, (close())/binary>>],
    ok = filelib:ensure_dir(filename:join(Dir, "x")),
    lists:foldl(fun(S, N) -> ok = file:write_file(filename:join(Dir, io_lib:format("seed-~3..0b", [N])), S), N + 1 end,
                0, Seeds).
