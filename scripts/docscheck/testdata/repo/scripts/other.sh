#!/bin/sh
# Deviation: a note with no row.
