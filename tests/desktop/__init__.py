"""The real-driver lane: tests that drive the real cua-driver against GTK apps under Xvfb."""
