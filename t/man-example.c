/* Write 10 frames of 64 x 48 uint16 into a store, then read frame 7 back. */
#include <shardpipe.h>
#include <stdio.h>
#include <string.h>

#define H 64
#define W 48

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "example.zarr";
    static uint16_t frame[H * W], back[H * W];
    const char *names[3] = { "t", "y", "x" };
    const uint64_t chunk[3] = { 2, 32, 32 }, per_shard[3] = { 4, 2, 2 };
    shardpipe_desc desc;
    shardpipe_stream *s;
    shardpipe_reader *r;
    int rc;

    shardpipe_desc_init(&desc);
    desc.rank = 3;
    desc.dtype = SHARDPIPE_DTYPE_UINT16;
    desc.codec = SHARDPIPE_CODEC_ZSTD;
    desc.level = 3;
    desc.overwrite = 1;
    for (int d = 0; d < 3; d++) {
        desc.dims[d].name = names[d];
        desc.dims[d].size = d == 0 ? 0 : d == 1 ? H : W; /* t unbounded */
        desc.dims[d].chunk = chunk[d];
        desc.dims[d].chunks_per_shard = per_shard[d];
    }
    rc = shardpipe_stream_open(&s, path, &desc);
    if (rc != SHARDPIPE_OK) {
        fprintf(stderr, "open: %s: %s\n", shardpipe_strerror(rc),
                shardpipe_last_error_message());
        return 1;
    }
    for (int t = 0; t < 10 && rc == SHARDPIPE_OK; t++) {
        for (int i = 0; i < H * W; i++)
            frame[i] = (uint16_t)(t * 1000 + i % 997);
        rc = shardpipe_stream_append(s, frame, sizeof(frame));
    }
    if (rc != SHARDPIPE_OK)
        fprintf(stderr, "append: %s: %s\n", shardpipe_strerror(rc),
                shardpipe_stream_message(s));
    if (shardpipe_stream_close(s) != SHARDPIPE_OK || rc != SHARDPIPE_OK)
        return 1;

    rc = shardpipe_reader_open(&r, path);
    if (rc != SHARDPIPE_OK) {
        fprintf(stderr, "reader: %s: %s\n", shardpipe_strerror(rc),
                shardpipe_last_error_message());
        return 1;
    }
    {
        const uint64_t start[3] = { 7, 0, 0 }, count[3] = { 1, H, W };

        rc = shardpipe_reader_read(r, start, count, back, sizeof(back));
    }
    if (rc != SHARDPIPE_OK)
        fprintf(stderr, "read: %s: %s\n", shardpipe_strerror(rc),
                shardpipe_reader_message(r));
    shardpipe_reader_close(r);
    if (rc != SHARDPIPE_OK || back[5] != 7 * 1000 + 5) {
        fprintf(stderr, "frame 7 did not read back\n");
        return 1;
    }
    printf("%s: 10 frames written, frame 7 read back\n", path);
    return 0;
}
