"""Stand-in for the datasets package (tests only; see ../README.md): Dataset.from_list keeps the rows."""


class Dataset:
    def __init__(self, rows):
        self.rows = list(rows)
        self.column_names = sorted({key for row in self.rows for key in row})

    @classmethod
    def from_list(cls, rows):
        return cls(rows)

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, index):
        return self.rows[index]
