/*
 * codec_none.h - stage 3 for codec "none": each chunk copied into its
 * compressed slot, its size being the chunk's size.  One work-group per
 * chunk (groups stride over the chunks), the words of a chunk spread over
 * the group.
 */
#ifndef SP_KERNEL_CODEC_NONE_H
#define SP_KERNEL_CODEC_NONE_H

#include "kernel-list.h"

SP_KERNEL_ENTRY(sp_codec_none)
{
	const u64 unit = copy_unit(chunk_bytes | capacity);

	for (u64 j = GROUP_ID(); j < n; j += NUM_GROUPS()) {
		UNIT();
		lane_copy(slots + j * capacity, pool + j * chunk_bytes,
			  chunk_bytes, unit, LOCAL_ID(), LOCAL_SIZE());
		if (LOCAL_ID() == 0)
			sizes[j] = chunk_bytes;
	}
}

#endif
