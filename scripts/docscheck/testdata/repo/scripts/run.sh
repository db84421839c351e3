#!/bin/sh
# Deviation: a note in a script.
