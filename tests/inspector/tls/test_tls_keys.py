"""The key schedules (inspector/tls/keys.py): TLS 1.3's against RFC 8448's "Simple 1-RTT Handshake" trace
(section 3), derived here from the client's X25519 private key through every secret to the traffic keys;
KeyUpdate's "traffic upd" against an HKDF built from ``cryptography``'s own; the TLS 1.2 PRF against the
P_SHA256 / P_SHA384 test vectors circulated on the IETF TLS list, and its key block."""

from __future__ import annotations

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

from inspector.tls.cipher import Tls13Decryptor
from inspector.tls.keys import (
    derive_secret,
    hkdf_expand,
    hkdf_expand_label,
    hkdf_extract,
    key_block,
    next_traffic_secret,
    prf,
    traffic_key_iv,
)
from inspector.tls.tls_records import RecordSplitter
from inspector.tls.tls_registry import CIPHER_SUITES

# RFC 8448 section 3, the wire records (hex test vectors) and the values the RFC gives for them.
RFC8448_CLIENT_PRIVATE = "49af42ba7f7994852d713ef2784bcbcaa7911de26adc5642cb634540e7ea5005"
RFC8448_SERVER_PUBLIC = "c9828876112095fe66762bdbf7c672e156d6cc253b833df1dd69b1b04e751f0f"
RFC8448_CLIENT_HELLO = (
    "16030100c4010000c00303cb34ecb1e78163ba1c38c6dacb196a6dffa21a8d9912ec18a2ef6283024dece7000006130113031302010000"
    "910000000b0009000006736572766572ff01000100000a00140012001d0017001800190100010101020103010400230000003300260024"
    "001d002099381de560e4bd43d23d8e435a7dbafeb3c06e51c13cae4d5413691e529aaf2c002b0003020304000d0020001e040305030603"
    "020308040805080604010501060102010402050206020202002d00020101001c00024001")
RFC8448_SERVER_HELLO = (
    "160303005a020000560303a6af06a4121860dc5e6e60249cd34c95930c8ac5cb1434dac155772ed3e2692800130100002e00330024001d"
    "0020c9828876112095fe66762bdbf7c672e156d6cc253b833df1dd69b1b04e751f0f002b00020304")
RFC8448_SERVER_FLIGHT = (
    "17030302a2d1ff334a56f5bff6594a07cc87b580233f500f45e489e7f33af35edf7869fcf40aa40aa2b8ea73f848a7ca07612ef9f945cb"
    "960b4068905123ea78b111b429ba9191cd05d2a389280f526134aadc7fc78c4b729df828b5ecf7b13bd9aefb0e57f271585b8ea9bb355c"
    "7c79020716cfb9b1183ef3ab20e37d57a6b9d7477609aee6e122a4cf51427325250c7d0e509289444c9b3a648f1d71035d2ed65b0e3cdd"
    "0cbae8bf2d0b227812cbb360987255cc744110c453baa4fcd610928d809810e4b7ed1a8fd991f06aa6248204797e36a6a73b70a2559c09"
    "ead686945ba246ab66e5edd8044b4c6de3fcf2a89441ac66272fd8fb330ef8190579b3684596c960bd596eea520a56a8d650f563aad274"
    "09960dca63d3e688611ea5e22f4415cf9538d51a200c27034272968a264ed6540c84838d89f72c24461aad6d26f59ecaba9acbbb317b66"
    "d902f4f292a36ac1b639c637ce343117b659622245317b49eeda0c6258f100d7d961ffb138647e92ea330faeea6dfa31c7a84dc3bd7e1b"
    "7a6c7178af36879018e3f252107f243d243dc7339d5684c8b0378bf30244da8c87c843f5e56eb4c5e8280a2b48052cf93b16499a66db7c"
    "ca71e4599426f7d461e66f99882bd89fc50800becca62d6c74116dbd2972fda1fa80f85df881edbe5a37668936b335583b599186dc5c69"
    "18a396fa48a181d6b6fa4f9d62d513afbb992f2b992f67f8afe67f76913fa388cb5630c8ca01e0c65d11c66a1e2ac4c85977b7c7a6999b"
    "bf10dc35ae69f5515614636c0b9b68c19ed2e31c0b3b66763038ebba42f3b38edc0399f3a9f23faa63978c317fc9fa66a73f60f0504de9"
    "3b5b845e275592c12335ee340bbc4fddd502784016e4b3be7ef04dda49f4b440a30cb5d2af939828fd4ae3794e44f94df5a631ede42c17"
    "19bfdabf0253fe5175be898e750edc53370d2b")
RFC8448_CLIENT_FINISHED = (
    "170303003575ec4dc238cce60b298044a71e219c56cc77b0517fe9b93c7a4bfc44d87f38f80338ac98fc46deb384bd1caeacab6867d726"
    "c40546")
RFC8448_SERVER_TICKET = (
    "17030300de3a6b8f90414a97d6959c3487680de5134a2b240e6cffac116e95d41d6af8f6b580dcf3d11d63c758db289a015940252f5571"
    "3e061dc13e078891a38efbcf5753ad8ef170ad3c7353d16d9da773b9ca7f2b9fa1b6c0d4a3d03f75e09c30ba1e62972ac46f75f7b981be"
    "63439b2999ce13064615139891d5e4c5b406f16e3fc181a77ca475840025db2f0a77f81b5ab05b94c01346755f69232c86519d86cbeeac"
    "87aac347d143f9605d64f650db4d023e70e952ca49fe5137121c74bc2697687e248746d6df353005f3bce18696129c8153556b3b6c6779"
    "b37bf15985684f")
RFC8448_CLIENT_APP = (
    "1703030043a23f7054b62c94d0affafe8228ba55cbefacea42f914aa66bcab3f2b9819a8a5b46b395bd54a9a20441e2b62974e1f5a6292"
    "a2977014bd1e3deae63aeebb21694915e4")
RFC8448_SERVER_APP = (
    "17030300432e937e11ef4ac740e538ad36005fc4a46932fc3225d05f82aa1b36e30efaf97d90e6dffc602dcb501a59a8fcc49c4bf2e5f0"
    "a21c0047c2abf332540dd032e167c2955d")
RFC8448_CLIENT_ALERT = "1703030013c9872760655666b74d7ff1153efd6db6d0b0e3"
RFC8448_SERVER_ALERT = "1703030013b58fd67166ebf599d24720cfbe7efa7a8864a9"
RFC8448_APP_DATA = bytes(range(0x32))  # both sides send 00 01 ... 31
RFC8448_SHARED_SECRET = "8bd4054fb55b9d63fdfbacf9f04b9f0d35e6d63f537563efd46272900f89492d"
RFC8448_SECRETS = {  # the key log a client would have written
    "CLIENT_HANDSHAKE_TRAFFIC_SECRET": "b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21",
    "SERVER_HANDSHAKE_TRAFFIC_SECRET": "b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38",
    "CLIENT_TRAFFIC_SECRET_0": "9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5",
    "SERVER_TRAFFIC_SECRET_0": "a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643",
}
RFC8448_CLIENT_RANDOM = "cb34ecb1e78163ba1c38c6dacb196a6dffa21a8d9912ec18a2ef6283024dece7"
RFC8448_KEYLOG = "".join(f"{label} {RFC8448_CLIENT_RANDOM} {secret}\n" for label, secret in RFC8448_SECRETS.items())
AES128 = CIPHER_SUITES[0x1301]


def test_rfc8448_key_schedule_from_the_private_key_to_the_traffic_secrets() -> None:
    private = X25519PrivateKey.from_private_bytes(bytes.fromhex(RFC8448_CLIENT_PRIVATE))
    shared = private.exchange(X25519PublicKey.from_public_bytes(bytes.fromhex(RFC8448_SERVER_PUBLIC)))
    assert shared.hex() == RFC8448_SHARED_SECRET
    early = hkdf_extract("sha256", b"", bytes(32))
    assert early.hex() == "33ad0a1c607ec03b09e6cd9893680ce210adf300aa1f2660e1b22e10f170f92a"
    derived = derive_secret("sha256", early, "derived", b"")
    assert derived.hex() == "6f2615a108c702c5678f54fc9dbab69716c076189c48250cebeac3576c3611ba"
    handshake = hkdf_extract("sha256", derived, shared)
    assert handshake.hex() == "1dc826e93606aa6fdc0aadc12f741b01046aa6b99f691ed221a9f0ca043fbeac"
    hello = bytes.fromhex(RFC8448_CLIENT_HELLO)[5:] + bytes.fromhex(RFC8448_SERVER_HELLO)[5:]
    assert derive_secret("sha256", handshake, "c hs traffic", hello).hex() == RFC8448_SECRETS[
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET"]
    server_hs = derive_secret("sha256", handshake, "s hs traffic", hello)
    assert server_hs.hex() == RFC8448_SECRETS["SERVER_HANDSHAKE_TRAFFIC_SECRET"]
    # the server's flight, decrypted with its handshake keys, completes the transcript to its Finished
    (flight,) = RecordSplitter().feed(bytes.fromhex(RFC8448_SERVER_FLIGHT), 0.0)
    content_type, messages = Tls13Decryptor(AES128, server_hs).open(flight)
    assert content_type == 22 and messages[0] == 8 and messages[-36] == 20  # EncryptedExtensions ... Finished
    master = hkdf_extract("sha256", derive_secret("sha256", handshake, "derived", b""), bytes(32))
    assert master.hex() == "18df06843d13a08bf2a449844c5f8a478001bc4d4c627984d5a41da8d0402919"
    transcript = hello + messages
    assert derive_secret("sha256", master, "c ap traffic", transcript).hex() == RFC8448_SECRETS[
        "CLIENT_TRAFFIC_SECRET_0"]
    assert derive_secret("sha256", master, "s ap traffic", transcript).hex() == RFC8448_SECRETS[
        "SERVER_TRAFFIC_SECRET_0"]


def test_rfc8448_traffic_keys_and_ivs() -> None:
    expected = {
        "SERVER_HANDSHAKE_TRAFFIC_SECRET": ("3fce516009c21727d0f2e4e86ee403bc", "5d313eb2671276ee13000b30"),
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET": ("dbfaa693d1762c5b666af5d950258d01", "5bd3c71b836e0b76bb73265f"),
        "SERVER_TRAFFIC_SECRET_0": ("9f02283b6c9c07efc26bb9f2ac92e356", "cf782b88dd83549aadf1e984"),
        "CLIENT_TRAFFIC_SECRET_0": ("17422dda596ed5d9acd890e3c63f5051", "5b78923dee08579033e523d9"),
    }
    for label, (key, iv) in expected.items():
        got = traffic_key_iv("sha256", bytes.fromhex(RFC8448_SECRETS[label]), 16, 12)
        assert (got[0].hex(), got[1].hex()) == (key, iv), label


def test_hkdf_expand_label_and_key_update_against_cryptography_hkdf() -> None:
    secret = bytes(range(48))
    for hash_name, algorithm, length in (("sha256", hashes.SHA256(), 32), ("sha384", hashes.SHA384(), 48)):
        label = b"tls13 traffic upd"
        info = length.to_bytes(2, "big") + bytes([len(label)]) + label + b"\x00"  # HkdfLabel, empty context
        independent = HKDFExpand(algorithm, length, info).derive(secret[:length])
        assert next_traffic_secret(hash_name, secret[:length]) == independent
        assert hkdf_expand_label(hash_name, secret[:length], "traffic upd", b"", length) == independent
        assert hkdf_expand(hash_name, secret, b"info", 200) == HKDFExpand(algorithm, 200, b"info").derive(secret)


def test_tls12_prf_vectors() -> None:
    out = prf("sha256", bytes.fromhex("9bbe436ba940f017b17652849a71db35"), b"test label",
              bytes.fromhex("a0ba9f936cda311827a6f796ffd5198c"), 100)
    assert out.hex() == (
        "e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a6b301791e90d35c9c9a46b4e14baf9af0fa022f7"
        "077def17abfd3797c0564bab4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff70187347b66")
    out = prf("sha384", bytes.fromhex("b80b733d6ceefcdc71566ea48e5567df"), b"test label",
              bytes.fromhex("cd665cf6a8447dd6ff8b27555edb7465"), 48)
    assert out.hex() == ("7b0c18e9ced410ed1804f2cfa34a336a1c14dffb4900bb5fd7942107e81c83cde9ca0faa60be9fe34f82b1233c"
                         "9146a0")


def test_key_block_is_cut_in_rfc5246_order() -> None:
    master, client_random, server_random = bytes(range(48)), b"c" * 32, b"s" * 32
    block = prf("sha256", master, b"key expansion", server_random + client_random, 2 * (20 + 16 + 0))
    kb = key_block("sha256", master, client_random, server_random, 20, 16, 0)
    assert kb.client_mac + kb.server_mac + kb.client_key + kb.server_key == block
    assert (len(kb.client_mac), len(kb.client_key), kb.client_iv) == (20, 16, b"")
    gcm = key_block("sha384", master, client_random, server_random, 0, 32, 4)
    assert gcm.client_key + gcm.server_key + gcm.client_iv + gcm.server_iv == prf(
        "sha384", master, b"key expansion", server_random + client_random, 72)
