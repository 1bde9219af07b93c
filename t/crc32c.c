/*
 * crc32c.c - CRC-32C against the test vectors of RFC 3720 appendix B.4 and
 * the check value of the Castagnoli polynomial, and the dispatched
 * implementation against the portable one on random data.
 */
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "tap.h"
#include "testutil.h"

int main(void)
{
	uint8_t buf[48];
	uint64_t rng = test_seed();
	/* RFC 3720 B.4: an iSCSI SCSI Read (10) command PDU. */
	static const uint8_t pdu[48] = {
		0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00,
		0x00, 0x18, 0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	uint8_t *big;
	int agree = 1, chain = 1;

	plan(9);
	diag("implementation: %s", crc32c_impl_name());
	is_int(crc32c(0, "123456789", 9), 0xe3069283, "check value of \"123456789\"");
	memset(buf, 0, 32);
	is_int(crc32c(0, buf, 32), 0x8a9136aa, "32 bytes of zeros");
	memset(buf, 0xff, 32);
	is_int(crc32c(0, buf, 32), 0x62a8ab43, "32 bytes of 0xff");
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	is_int(crc32c(0, buf, 32), 0x46dd794e, "32 incrementing bytes");
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	is_int(crc32c(0, buf, 32), 0x113fdb5c, "32 decrementing bytes");
	is_int(crc32c(0, pdu, 48), 0xd9963a56, "iSCSI read command PDU");
	is_int(crc32c_portable(0, pdu, 48), 0xd9963a56,
	       "portable implementation on the PDU");

	big = malloc(70000);
	test_fill(big, 70000, 0, &rng);
	for (int t = 0; t < 300; t++) {
		size_t off = (size_t)(test_rand(&rng) % 64);
		size_t n = (size_t)(test_rand(&rng) % (70000 - 64));
		size_t cut = n ? (size_t)(test_rand(&rng) % n) : 0;
		uint32_t whole = crc32c(0, big + off, n);

		if (whole != crc32c_portable(0, big + off, n)) {
			diag("differs at offset %zu length %zu", off, n);
			agree = 0;
		}
		if (crc32c(crc32c(0, big + off, cut), big + off + cut, n - cut) !=
		    whole)
			chain = 0;
	}
	ok(agree, "dispatched and portable agree on 300 random spans");
	ok(chain, "a CRC continued over two parts equals the whole");
	free(big);
	return done_testing();
}
