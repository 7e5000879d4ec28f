"""The report page (`flashprof report`): one self-contained HTML file per folder of reports."""
