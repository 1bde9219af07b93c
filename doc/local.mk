# Man pages: man(7) sources kept in the repository and installed as they
# are (no generator at build time).  t/man-render.sh checks that they render
# without warnings, t/man-help.sh that shardpipe.1 follows every --help,
# t/man-example.sh that the example of shardpipe.3 builds and runs.
dist_man_MANS = doc/shardpipe.1 doc/shardpipe.3

# The design document: distributed, not installed.  Sources cite its
# sections by number; t/design-cites.sh checks that each cited one exists.
EXTRA_DIST += doc/design.md
